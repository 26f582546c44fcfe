/**
 * Partner API keys, the one code path for the operator's CLI and the portal: create (returns the full
 * key once), find by key, revoke, roll with an overlap, list; and when each key was last used.
 *
 * A key's `revokedAt` may lie in the future: a rolled key keeps working until then (DECISIONS,
 * "Portal"), and answers 401 revoked_api_key from that instant on. `keyStatus` is the one reading of
 * it that every face uses.
 */

import { newId } from '../ids.ts';
import {
  environmentOfKey,
  generateApiKey,
  hashApiKey,
  KEY_PREFIX,
  sameHash,
} from './api-key-material.ts';
import { inTransaction, type Queryable } from './client.ts';
import type { Environment } from './products.ts';

export interface ApiKeyRecord {
  id: string;
  partnerId: string;
  partnerName: string;
  environment: Environment;
  prefix: string;
  last4: string;
  name: string | null;
  createdAt: Date;
  /** When the key stops (or stopped) working; in the future while a roll's overlap runs. */
  revokedAt: Date | null;
  /** The portal member who created it; null when the operator's CLI did. */
  createdBy: string | null;
}

/** A key as the portal and `key list` show it. */
export interface ApiKeyListing extends ApiKeyRecord {
  createdByEmail: string | null;
  lastUsedAt: Date | null;
}

export type KeyStatus = 'active' | 'expiring' | 'revoked';

/** active: no end set; expiring: rolled, still working until revokedAt; revoked: no longer works. */
export function keyStatus(key: Pick<ApiKeyRecord, 'revokedAt'>, now = Date.now()): KeyStatus {
  if (!key.revokedAt) return 'active';
  return key.revokedAt.getTime() > now ? 'expiring' : 'revoked';
}

/** Whether a key authenticates at `now`. */
export function keyWorks(key: Pick<ApiKeyRecord, 'revokedAt'>, now = Date.now()): boolean {
  return keyStatus(key, now) !== 'revoked';
}

/** How long a rolled key keeps working: the choices the portal and the CLI offer. */
export const ROLL_OVERLAPS = {
  now: 0,
  '1h': 3_600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
} as const;
export type RollOverlap = keyof typeof ROLL_OVERLAPS;

export function isRollOverlap(raw: unknown): raw is RollOverlap {
  return typeof raw === 'string' && Object.hasOwn(ROLL_OVERLAPS, raw);
}

interface Row {
  id: string;
  partner_id: string;
  partner_name: string;
  environment: Environment;
  key_hash: Uint8Array;
  prefix: string;
  last4: string;
  name: string | null;
  created_at: Date;
  revoked_at: Date | null;
  created_by: string | null;
}

interface ListingRow extends Row {
  created_by_email: string | null;
  last_used_at: Date | null;
}

const toRecord = (r: Row): ApiKeyRecord => ({
  id: r.id,
  partnerId: r.partner_id,
  partnerName: r.partner_name,
  environment: r.environment,
  prefix: r.prefix,
  last4: r.last4,
  name: r.name,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  createdBy: r.created_by,
});

const SELECT = `SELECT k.*, p.name AS partner_name FROM api_keys k JOIN partners p ON p.id = k.partner_id`;
const SELECT_LISTING = `SELECT k.*, p.name AS partner_name, m.email AS created_by_email, u.last_used_at
  FROM api_keys k JOIN partners p ON p.id = k.partner_id
  LEFT JOIN portal_members m ON m.id = k.created_by
  LEFT JOIN api_key_usage u ON u.key_id = k.id`;

async function insertKey(
  db: Queryable,
  partnerId: string,
  environment: Environment,
  name: string | null,
  createdBy: string | null,
): Promise<{ key: string; record: ApiKeyRecord }> {
  const key = generateApiKey(environment);
  const id = newId('key');
  await db.query(
    `INSERT INTO api_keys (id, partner_id, environment, key_hash, prefix, last4, name, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      id,
      partnerId,
      environment,
      hashApiKey(key),
      KEY_PREFIX[environment],
      key.slice(-4),
      name,
      createdBy,
    ],
  );
  const { rows } = await db.query<Row>(`${SELECT} WHERE k.id = $1`, [id]);
  return { key, record: toRecord(rows[0]!) };
}

export function createApiKeysRepo(db: Queryable) {
  return {
    /** Creates a key; the returned `key` is the only time the full secret exists outside its owner. */
    async create(
      partnerId: string,
      environment: Environment,
      name?: string,
      createdBy?: string,
    ): Promise<{ key: string; record: ApiKeyRecord }> {
      return insertKey(db, partnerId, environment, name ?? null, createdBy ?? null);
    },

    /**
     * The record of a presented key, or undefined. Strings without a known prefix never reach the
     * database. The index finds the row by hash; the constant-time comparison guards the match.
     */
    async findByKey(key: string): Promise<ApiKeyRecord | undefined> {
      if (!environmentOfKey(key)) return undefined;
      const hash = hashApiKey(key);
      const { rows } = await db.query<Row>(`${SELECT} WHERE k.key_hash = $1`, [hash]);
      const row = rows[0];
      if (!row || !sameHash(Buffer.from(row.key_hash), hash)) return undefined;
      return toRecord(row);
    },

    async get(id: string): Promise<ApiKeyRecord | undefined> {
      const { rows } = await db.query<Row>(`${SELECT} WHERE k.id = $1`, [id]);
      return rows[0] && toRecord(rows[0]);
    },

    /**
     * Revokes a key by id at once (also a rolled key still in its overlap); false when no such key
     * still works.
     */
    async revoke(id: string): Promise<boolean> {
      const r = await db.query(
        `UPDATE api_keys SET revoked_at = now()
         WHERE id = $1 AND (revoked_at IS NULL OR revoked_at > now())`,
        [id],
      );
      return r.rowCount === 1;
    },

    async list(partnerId?: string, environment?: Environment): Promise<ApiKeyListing[]> {
      const { rows } = await db.query<ListingRow>(
        `${SELECT_LISTING}
         WHERE ($1::text IS NULL OR k.partner_id = $1) AND ($2::text IS NULL OR k.environment = $2)
         ORDER BY k.created_at, k.id`,
        [partnerId ?? null, environment ?? null],
      );
      return rows.map((r) => ({
        ...toRecord(r),
        createdByEmail: r.created_by_email,
        lastUsedAt: r.last_used_at,
      }));
    },
  };
}

/**
 * Rolls a key: a new key with the same name, environment and partner, and the old one ends after
 * `overlap` (at once for `now`). Only an active key (no end set) rolls. One transaction: either
 * both happen or neither. Undefined when no such active key exists.
 */
export async function rollApiKey(
  db: Queryable,
  id: string,
  overlap: RollOverlap,
  createdBy?: string,
): Promise<{ key: string; record: ApiKeyRecord; old: ApiKeyRecord } | undefined> {
  return inTransaction(db, async (tx) => {
    const { rows } = await tx.query<Row>(
      `UPDATE api_keys k SET revoked_at = now() + $2 * interval '1 millisecond'
       FROM partners p
       WHERE k.id = $1 AND p.id = k.partner_id AND k.revoked_at IS NULL
       RETURNING k.*, p.name AS partner_name`,
      [id, ROLL_OVERLAPS[overlap]],
    );
    const old = rows[0];
    if (!old) return undefined;
    const created = await insertKey(
      tx,
      old.partner_id,
      old.environment,
      old.name,
      createdBy ?? null,
    );
    return { ...created, old: toRecord(old) };
  });
}

export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;

/**
 * A key's record from memory, without a promise, when a cache holds it (the API's read cache):
 * `{ value }` (undefined for a key known not to exist), or undefined when it must be looked up.
 */
export interface CachedKeyLookup {
  cachedByKey?(key: string): { value: ApiKeyRecord | undefined } | undefined;
}

/**
 * Records that a key was used, at most one write a minute per key and process, off the request's
 * path (the write is not awaited; a failed write only loses a "last used" time).
 */
export function createApiKeyUsage(db: Queryable, everyMs = 60_000) {
  const written = new Map<string, number>();
  return {
    touch(keyId: string, now = Date.now()): void {
      const last = written.get(keyId);
      if (last !== undefined && now - last < everyMs) return;
      written.set(keyId, now);
      db.query(
        `INSERT INTO api_key_usage (key_id, last_used_at) VALUES ($1, now())
         ON CONFLICT (key_id) DO UPDATE SET last_used_at = excluded.last_used_at`,
        [keyId],
      ).catch(() => written.delete(keyId));
    },
  };
}
