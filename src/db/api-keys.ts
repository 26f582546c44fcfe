/** Repository of partner API keys: create (returns the full key once), find by key, revoke, list. */
import { environmentOfKey, generateApiKey, hashApiKey, KEY_PREFIX, sameHash } from '../api/keys.ts';
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';
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
  revokedAt: Date | null;
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
});

const SELECT = `SELECT k.*, p.name AS partner_name FROM api_keys k JOIN partners p ON p.id = k.partner_id`;

export function createApiKeysRepo(db: Queryable) {
  return {
    /** Creates a key; the returned `key` is the only time the full secret exists outside its owner. */
    async create(
      partnerId: string,
      environment: Environment,
      name?: string,
    ): Promise<{ key: string; record: ApiKeyRecord }> {
      const key = generateApiKey(environment);
      const id = newId('key');
      await db.query(
        `INSERT INTO api_keys (id, partner_id, environment, key_hash, prefix, last4, name)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          id,
          partnerId,
          environment,
          hashApiKey(key),
          KEY_PREFIX[environment],
          key.slice(-4),
          name ?? null,
        ],
      );
      const { rows } = await db.query<Row>(`${SELECT} WHERE k.id = $1`, [id]);
      return { key, record: toRecord(rows[0]!) };
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

    /** Revokes a key by id; false when no such active key exists. */
    async revoke(id: string): Promise<boolean> {
      const r = await db.query(
        'UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL',
        [id],
      );
      return r.rowCount === 1;
    },

    async list(partnerId?: string): Promise<ApiKeyRecord[]> {
      const { rows } = await db.query<Row>(
        `${SELECT} WHERE ($1::text IS NULL OR k.partner_id = $1) ORDER BY k.created_at, k.id`,
        [partnerId ?? null],
      );
      return rows.map(toRecord);
    },
  };
}

export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
