/**
 * The parent origins allowed to frame a partner environment's embed: added, removed or replaced,
 * with one audit row per origin allowed or removed, in one transaction; the portal's embed page
 * and `embed origins` call these. TooManyOriginsError refuses a list over the limit.
 */
import type { Database } from '../db/client.ts';
import { createEmbedSettingsRepo, type EmbedSettings } from '../db/embed-settings.ts';
import type { Environment } from '../db/products.ts';
import { type Actor, recordChange } from './actor.ts';

type Repo = ReturnType<typeof createEmbedSettingsRepo>;
export type OriginChange = 'add' | 'remove' | 'set';

/** The settings as changed, or undefined when the partner environment has none. */
export function changeEmbedOrigins(
  db: Database,
  actor: Actor,
  input: {
    partnerId: string;
    environment: Environment;
    change: OriginChange;
    origins: readonly string[];
  },
): Promise<EmbedSettings | undefined> {
  const { partnerId, environment, origins } = input;
  const apply: Record<OriginChange, (repo: Repo) => Promise<EmbedSettings | undefined>> = {
    add: (repo) => repo.addOrigins(partnerId, environment, origins),
    remove: (repo) => repo.removeOrigins(partnerId, environment, origins),
    set: (repo) => repo.setOrigins(partnerId, environment, origins),
  };
  return db.transaction(async (tx) => {
    const repo = createEmbedSettingsRepo(tx);
    const before = await repo.get(partnerId, environment);
    if (!before) return undefined;
    const after = (await apply[input.change](repo))!;
    const was = new Set(before.allowedOrigins);
    const now = new Set(after.allowedOrigins);
    const moves = [
      ...after.allowedOrigins
        .filter((o) => !was.has(o))
        .map((o) => ({ action: 'embed.origin_added' as const, target: o })),
      ...before.allowedOrigins
        .filter((o) => !now.has(o))
        .map((o) => ({ action: 'embed.origin_removed' as const, target: o })),
    ];
    for (const m of moves) await recordChange(tx, actor, { partnerId, environment, ...m });
    return after;
  });
}
