/**
 * Repository of the log indexer's durable position per chain (chain_cursors) and its recent history
 * (chain_cursor_history). Every block up to the cursor is indexed; the stored hash is the one the
 * block had when it was indexed, so the next range can check it still descends from it.
 *
 * Moves are compare-and-set on the previous position: an indexer that lost its lease (or raced
 * another one) fails to move the cursor and its transaction rolls back with the events it wrote.
 */
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import type { Queryable } from './client.ts';

export interface Cursor {
  blockNumber: bigint;
  blockHash: `0x${string}`;
}

/** How many past positions are kept for finding the fork point of a deep reorg. */
export const CURSOR_HISTORY = 256;

export class CursorMovedError extends BaseError<'cursor_moved'> {
  override name = 'CursorMovedError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('cursor_moved', message, { ...options, retryable: true });
  }
}

export function createCursorsRepo(db: Queryable) {
  return {
    async get(chainId: number): Promise<Cursor | undefined> {
      const { rows } = await db.query<{ block_number: string; block_hash: `0x${string}` }>(
        'SELECT block_number, block_hash FROM chain_cursors WHERE chain_id = $1',
        [chainId],
      );
      const r = rows[0];
      return r && { blockNumber: BigInt(r.block_number), blockHash: r.block_hash };
    },

    /**
     * Moves the cursor from `expected` (undefined: no cursor yet) to `next`, recording `next` in the
     * history and dropping history above it (a rewind forgets positions of the abandoned branch).
     * Throws CursorMovedError when the cursor is not at `expected`.
     */
    async move(chainId: number, expected: Cursor | undefined, next: Cursor): Promise<void> {
      const r = expected
        ? await db.query(
            `UPDATE chain_cursors SET block_number = $2, block_hash = $3, updated_at = now()
             WHERE chain_id = $1 AND block_number = $4 AND block_hash = $5`,
            [
              chainId,
              next.blockNumber.toString(),
              next.blockHash,
              expected.blockNumber.toString(),
              expected.blockHash,
            ],
          )
        : await db.query(
            `INSERT INTO chain_cursors (chain_id, block_number, block_hash) VALUES ($1, $2, $3)
             ON CONFLICT (chain_id) DO NOTHING`,
            [chainId, next.blockNumber.toString(), next.blockHash],
          );
      if (r.rowCount !== 1) {
        throw new CursorMovedError(`cursor of chain ${chainId} moved under this indexer`);
      }
      await db.query(
        'DELETE FROM chain_cursor_history WHERE chain_id = $1 AND block_number >= $2',
        [chainId, next.blockNumber.toString()],
      );
      await db.query(
        'INSERT INTO chain_cursor_history (chain_id, block_number, block_hash) VALUES ($1, $2, $3)',
        [chainId, next.blockNumber.toString(), next.blockHash],
      );
      await db.query(
        `DELETE FROM chain_cursor_history WHERE chain_id = $1 AND block_number <
           (SELECT min(block_number) FROM (SELECT block_number FROM chain_cursor_history
             WHERE chain_id = $1 ORDER BY block_number DESC LIMIT $2) newest)`,
        [chainId, CURSOR_HISTORY],
      );
    },

    /** Past positions, newest first (the current one included). */
    async history(chainId: number): Promise<Cursor[]> {
      const { rows } = await db.query<{ block_number: string; block_hash: `0x${string}` }>(
        `SELECT block_number, block_hash FROM chain_cursor_history WHERE chain_id = $1
         ORDER BY block_number DESC`,
        [chainId],
      );
      return rows.map((r) => ({ blockNumber: BigInt(r.block_number), blockHash: r.block_hash }));
    },

    /** Lowercase addresses of the engines the cursor covers. */
    async knownEngines(chainId: number): Promise<Set<string>> {
      const { rows } = await db.query<{ engine_address: string }>(
        'SELECT engine_address FROM indexer_engines WHERE chain_id = $1',
        [chainId],
      );
      return new Set(rows.map((r) => r.engine_address));
    },

    async addEngines(
      chainId: number,
      engines: readonly { address: string; productId: string }[],
    ): Promise<void> {
      if (engines.length === 0) return;
      await db.query(
        `INSERT INTO indexer_engines (chain_id, engine_address, product_id)
         SELECT $1, a, p FROM unnest($2::text[], $3::text[]) AS t(a, p)
         ON CONFLICT DO NOTHING`,
        [chainId, engines.map((e) => e.address.toLowerCase()), engines.map((e) => e.productId)],
      );
    },
  };
}

export type CursorsRepo = ReturnType<typeof createCursorsRepo>;
