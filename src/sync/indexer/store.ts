/**
 * Multi-row event insert for the indexer: one statement per chunk, rows passed as column arrays
 * through unnest (13 parameters whatever the row count, so no bind-parameter limit and one parse per
 * chunk). ON CONFLICT DO NOTHING on the dedupe key makes re-indexing a range a no-op.
 */
import type { Queryable } from '../../db/client.ts';
import { newId } from '../../ids.ts';
import type { IndexedEvent } from './events.ts';

export const DEFAULT_INSERT_CHUNK = 1_000;

/**
 * Inserts the events in order (seq follows chain order); returns how many were new. `afterChunk` runs
 * inside the caller's transaction after each chunk with the running count: a failure injector for
 * tests (a throw there is a crash in the middle of a range).
 */
export async function insertEvents(
  tx: Queryable,
  events: readonly IndexedEvent[],
  options: { chunk?: number; afterChunk?: (written: number) => void | Promise<void> } = {},
): Promise<number> {
  const chunk = options.chunk ?? DEFAULT_INSERT_CHUNK;
  let inserted = 0;
  for (let i = 0; i < events.length; i += chunk) {
    const part = events.slice(i, i + chunk);
    const r = await tx.query(
      `INSERT INTO events (id, partner_id, environment, product_id, event_type, dedupe_key, payload,
         occurred_at, chain_id, block_number, block_hash, tx_hash, log_index)
       SELECT id, partner_id, environment, product_id, event_type, dedupe_key, payload,
         occurred_at::timestamptz, chain_id::bigint, block_number::bigint, block_hash, tx_hash,
         log_index::integer
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
         $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
         WITH ORDINALITY AS t(id, partner_id, environment, product_id, event_type, dedupe_key, payload,
           occurred_at, chain_id, block_number, block_hash, tx_hash, log_index, ord)
       ORDER BY ord
       ON CONFLICT (dedupe_key) DO NOTHING`,
      [
        part.map(() => newId('evt')),
        part.map((e) => e.partnerId),
        part.map((e) => e.environment),
        part.map((e) => e.productId),
        part.map((e) => e.eventType),
        part.map((e) => e.dedupeKey),
        part.map((e) => e.payload),
        part.map((e) => e.occurredAt.toISOString()),
        part.map((e) => String(e.chainId)),
        part.map((e) => e.blockNumber.toString()),
        part.map((e) => e.blockHash),
        part.map((e) => e.txHash),
        part.map((e) => String(e.logIndex)),
      ],
    );
    inserted += r.rowCount;
    await options.afterChunk?.(i + part.length);
  }
  return inserted;
}
