/**
 * Named leases: at most one holder per name at a time. A holder renews before expiry while it
 * works; when it dies the lease expires and another process takes over. The database clock decides
 * expiry, so process clocks never disagree about it.
 */
import type { Queryable } from './client.ts';

export function createLeasesRepo(db: Queryable) {
  return {
    /** Takes or renews the lease; true when `holder` holds it for the next `ttlMs`. */
    async acquire(name: string, holder: string, ttlMs: number): Promise<boolean> {
      const { rows } = await db.query<{ holder: string }>(
        `INSERT INTO leases (name, holder, expires_at)
         VALUES ($1, $2, now() + ($3::int * interval '1 millisecond'))
         ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
           WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < now()
         RETURNING holder`,
        [name, holder, ttlMs],
      );
      return rows[0]?.holder === holder;
    },

    /**
     * Extends the lease while `holder` still has it, inside the caller's transaction: work committed
     * with a renewal is work done by the holder (a holder that lost the lease gets false).
     */
    async renew(name: string, holder: string, ttlMs: number): Promise<boolean> {
      const r = await db.query(
        `UPDATE leases SET expires_at = now() + ($3::int * interval '1 millisecond')
         WHERE name = $1 AND holder = $2`,
        [name, holder, ttlMs],
      );
      return r.rowCount === 1;
    },

    async release(name: string, holder: string): Promise<void> {
      await db.query('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]);
    },

    async holderOf(name: string): Promise<string | undefined> {
      const { rows } = await db.query<{ holder: string }>(
        'SELECT holder FROM leases WHERE name = $1 AND expires_at >= now()',
        [name],
      );
      return rows[0]?.holder;
    },
  };
}
