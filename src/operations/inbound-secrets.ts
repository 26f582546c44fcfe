/**
 * The inbound secret of a partner environment: created, or rotated with a grace period during which
 * the old one still verifies, with its audit row in one transaction; the portal's inbound page and
 * `webhook inbound-secret set` call this.
 */
import { inTransaction, type Queryable } from '../db/client.ts';
import { createInboundSecretsRepo } from '../db/inbound-secrets.ts';
import type { Environment } from '../db/products.ts';
import { formatDuration } from '../time-format.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import { type Actor, recordChange } from './actor.ts';

/** `db`: the database, or a transaction this change joins (the demo's provisioning). */
export function setInboundSecret(
  db: Queryable,
  box: SecretBox,
  actor: Actor,
  input: { partnerId: string; environment: Environment; graceMs?: number },
): Promise<{ secret: string; rotated: boolean; previousExpiresAt: Date | null }> {
  return inTransaction(db, async (tx) => {
    const set = await createInboundSecretsRepo(tx, box).set(input.partnerId, input.environment, {
      graceMs: input.graceMs ?? 0,
    });
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'inbound.secret_set',
      environment: input.environment,
      target: set.rotated ? `rotated, grace ${formatDuration(input.graceMs ?? 0)}` : 'created',
    });
    return set;
  });
}
