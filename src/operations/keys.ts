/**
 * API keys: create, roll, revoke. Each writes the key and its audit row in one transaction; the
 * portal's keys page and the `key` command call these and nothing else.
 */
import { maskKey } from '../db/api-key-material.ts';
import {
  type ApiKeyRecord,
  createApiKeysRepo,
  type RollOverlap,
  rollApiKey,
} from '../db/api-keys.ts';
import { type Database, inTransaction, type Queryable } from '../db/client.ts';
import type { Environment } from '../db/products.ts';
import { formatUtc } from '../time-format.ts';
import { type Actor, authorOf, recordChange } from './actor.ts';

const masked = (k: ApiKeyRecord) => `${k.id} ${maskKey(k.prefix, k.last4)}`;

/** `db`: the database, or a transaction this change joins (the demo's provisioning). */
export function createKey(
  db: Queryable,
  actor: Actor,
  input: { partnerId: string; environment: Environment; name?: string | undefined },
): Promise<{ key: string; record: ApiKeyRecord }> {
  return inTransaction(db, async (tx) => {
    const made = await createApiKeysRepo(tx).create(
      input.partnerId,
      input.environment,
      input.name,
      authorOf(actor) ?? undefined,
    );
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'key.created',
      environment: input.environment,
      target: masked(made.record),
    });
    return made;
  });
}

/** Undefined when no such active key exists (revoked, or already expiring). */
export function rollKey(
  db: Database,
  actor: Actor,
  id: string,
  overlap: RollOverlap,
): Promise<{ key: string; record: ApiKeyRecord; old: ApiKeyRecord } | undefined> {
  return db.transaction(async (tx) => {
    const rolled = await rollApiKey(tx, id, overlap, authorOf(actor) ?? undefined);
    if (!rolled) return undefined;
    await recordChange(tx, actor, {
      partnerId: rolled.record.partnerId,
      action: 'key.rolled',
      environment: rolled.record.environment,
      target: `${id} → ${rolled.record.id}, old key ends ${formatUtc(rolled.old.revokedAt!)}`,
    });
    return rolled;
  });
}

/** The revoked key, or undefined when no key with this id still works. */
export function revokeKey(
  db: Queryable,
  actor: Actor,
  id: string,
): Promise<ApiKeyRecord | undefined> {
  return inTransaction(db, async (tx) => {
    const keys = createApiKeysRepo(tx);
    const key = await keys.get(id);
    if (!key || !(await keys.revoke(id))) return undefined;
    await recordChange(tx, actor, {
      partnerId: key.partnerId,
      action: 'key.revoked',
      environment: key.environment,
      target: masked(key),
    });
    return key;
  });
}
