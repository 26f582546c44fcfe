/** Repository of members' passkeys (WebAuthn credentials). */
import type { Queryable } from './client.ts';

export interface Passkey {
  id: string;
  memberId: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

interface Row {
  id: string;
  member_id: string;
  public_key: Uint8Array;
  counter: string;
  transports: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

const toPasskey = (r: Row): Passkey => ({
  id: r.id,
  memberId: r.member_id,
  publicKey: new Uint8Array(r.public_key),
  counter: Number(r.counter),
  transports: r.transports ? r.transports.split(',') : [],
  name: r.name,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export function createPortalPasskeysRepo(db: Queryable) {
  return {
    async add(p: {
      id: string;
      memberId: string;
      publicKey: Uint8Array;
      counter: number;
      transports: readonly string[];
      name: string;
    }): Promise<void> {
      await db.query(
        `INSERT INTO portal_passkeys (id, member_id, public_key, counter, transports, name)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [p.id, p.memberId, Buffer.from(p.publicKey), p.counter, p.transports.join(','), p.name],
      );
    },

    async get(id: string): Promise<Passkey | undefined> {
      const { rows } = await db.query<Row>('SELECT * FROM portal_passkeys WHERE id = $1', [id]);
      return rows[0] && toPasskey(rows[0]);
    },

    async listFor(memberId: string): Promise<Passkey[]> {
      const { rows } = await db.query<Row>(
        'SELECT * FROM portal_passkeys WHERE member_id = $1 ORDER BY created_at, id',
        [memberId],
      );
      return rows.map(toPasskey);
    },

    async markUsed(id: string, counter: number): Promise<void> {
      await db.query(
        'UPDATE portal_passkeys SET counter = $2, last_used_at = now() WHERE id = $1',
        [id, counter],
      );
    },

    async remove(memberId: string, id: string): Promise<boolean> {
      const r = await db.query('DELETE FROM portal_passkeys WHERE id = $1 AND member_id = $2', [
        id,
        memberId,
      ]);
      return r.rowCount === 1;
    },
  };
}

export type PortalPasskeysRepo = ReturnType<typeof createPortalPasskeysRepo>;
