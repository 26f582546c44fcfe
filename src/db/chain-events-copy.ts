/**
 * Event writes for the indexer, in two steps so that the CPU work happens off the write path:
 *
 * - prepareEvents (while the previous range is being written): gives each event its id and renders
 *   the rows as COPY text, in chunks;
 * - insertPrepared (in the range's transaction): COPY, the cheapest way both engines take thousands
 *   of rows (no SQL or JSON to parse per row; figures in docs/maintainers/decisions.md, "Indexer writes").
 *
 * COPY has no ON CONFLICT, so each chunk runs under a savepoint: a chunk that meets an event already
 * stored (a range indexed again after a rewind, or a raced holder) is rolled back to it and inserted
 * again by the conflict-tolerant statement, which skips the stored ones. Either way the rows go in
 * chain order, so seq follows it. A chain-log event's key is its columns (events_chain_log), so no
 * dedupe_key text is written.
 */
import type { Hex } from 'viem';
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';
import { copyField, unescapeCopyField } from './copy-text.ts';
import type { Product } from './products.ts';

/** The events a chain log becomes (the indexer builds them: src/sync/indexer/events.ts). */
export type LifecycleEventType = 'deposit.confirmed' | 'redeem.confirmed' | 'redeem.requested';

/** One row for the events table. */
export interface IndexedEvent {
  partnerId: string;
  environment: Product['environment'];
  productId: string;
  /** With chainId, txHash and logIndex: the event's dedupe key (events_chain_log). */
  eventType: LifecycleEventType;
  /** The exact JSON text that is stored, signed and sent. */
  payload: string;
  /** Block time, ISO 8601 UTC (`YYYY-MM-DDTHH:MM:SSZ`, as in the payload). */
  occurredAt: string;
  chainId: number;
  blockNumber: bigint;
  blockHash: Hex;
  txHash: Hex;
  logIndex: number;
}

export const DEFAULT_INSERT_CHUNK = 1_000;

/** Rows per COPY chunk. Measured: PGlite is fastest at ~1,000 rows a chunk, PostgreSQL at a few thousand. */
export const insertChunkFor = (engine: 'pglite' | 'postgres'): number =>
  engine === 'pglite' ? 1_000 : 5_000;

const COLUMNS = [
  'id',
  'partner_id',
  'environment',
  'product_id',
  'event_type',
  'payload',
  'occurred_at',
  'chain_id',
  'block_number',
  'block_hash',
  'tx_hash',
  'log_index',
] as const;

/** The conflict-tolerant path: the chunk's rows as a JSON array of arrays, conflicts skipped. */
const FALLBACK_SQL = `INSERT INTO events (${COLUMNS.join(', ')})
  SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->>5, (r->>6)::timestamptz, (r->>7)::bigint,
    (r->>8)::bigint, r->>9, r->>10, (r->>11)::integer
  FROM json_array_elements($1::json) WITH ORDINALITY AS j(r, ord)
  ORDER BY ord
  ON CONFLICT DO NOTHING`;

export interface PreparedChunk {
  /** Rows in COPY text format, one line each. */
  readonly text: string;
  readonly count: number;
}

export interface PreparedEvents {
  readonly chunks: readonly PreparedChunk[];
  readonly count: number;
  /** The partner environments the events belong to, sorted: their counters are locked in this order. */
  readonly partners: readonly { partnerId: string; environment: string }[];
}

/**
 * COPY's text format escapes backslash, tab, newline and carriage return. Of an event's fields only
 * the payload can hold any of them; ids, hashes, numbers, times and enum values are ASCII without
 * them by construction, so they are written as they are.
 */
function line(e: IndexedEvent): string {
  return `${newId('evt')}\t${e.partnerId}\t${e.environment}\t${e.productId}\t${e.eventType}\t${copyField(e.payload)}\t${e.occurredAt}\t${e.chainId}\t${e.blockNumber}\t${e.blockHash}\t${e.txHash}\t${e.logIndex}\n`;
}

export function prepareEvents(
  events: readonly IndexedEvent[],
  chunk = DEFAULT_INSERT_CHUNK,
): PreparedEvents {
  const chunks: PreparedChunk[] = [];
  for (let i = 0; i < events.length; i += chunk) {
    let text = '';
    const end = Math.min(i + chunk, events.length);
    for (let j = i; j < end; j++) text += line(events[j] as IndexedEvent);
    chunks.push({ text, count: end - i });
  }
  const keys = new Map<string, { partnerId: string; environment: string }>();
  for (const e of events) {
    keys.set(`${e.partnerId}\u0000${e.environment}`, {
      partnerId: e.partnerId,
      environment: e.environment,
    });
  }
  const partners = [...keys.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, v]) => v);
  return { chunks, count: events.length, partners };
}

/**
 * Locks the event counters of every partner environment the events belong to, in sorted order
 * (migration 0042): the events trigger then takes them one row at a time in chain order, and two
 * writers of several partners (indexers of two chains) would otherwise lock them in opposite orders
 * and deadlock. A missing counter row is made first (at 0, the next event takes 1).
 */
async function lockPartnerCounters(
  tx: Queryable,
  partners: PreparedEvents['partners'],
): Promise<void> {
  if (partners.length === 0) return;
  const ids = JSON.stringify(partners.map((p) => [p.partnerId, p.environment]));
  await tx.query(
    `INSERT INTO event_sequences (partner_id, environment, product_id, last_value)
     SELECT k->>0, k->>1, '', 0 FROM json_array_elements($1::json) WITH ORDINALITY AS j(k, ord)
     ORDER BY ord
     ON CONFLICT DO NOTHING`,
    [ids],
  );
  await tx.query(
    `SELECT 1 FROM event_sequences s
     JOIN json_array_elements($1::json) AS j(k) ON s.partner_id = k->>0 AND s.environment = k->>1
     WHERE s.product_id = ''
     ORDER BY s.partner_id, s.environment
     FOR UPDATE OF s`,
    [ids],
  );
}

const UNIQUE_VIOLATION = '23505';
const isUniqueViolation = (err: unknown) =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === UNIQUE_VIOLATION;

/** The chunk's rows as arrays of field values again (the inverse of line()). */
function fallbackRows(text: string): (string | null)[][] {
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => l.split('\t').map(unescapeCopyField));
}

async function insertChunk(tx: Queryable, chunk: PreparedChunk): Promise<number> {
  // No RELEASE: a savepoint ends with its transaction, and the next one of the same name shadows it.
  await tx.query('SAVEPOINT indexer_chunk');
  try {
    return await tx.copyFrom('events', COLUMNS, chunk.text);
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await tx.query('ROLLBACK TO SAVEPOINT indexer_chunk');
    const r = await tx.query(FALLBACK_SQL, [JSON.stringify(fallbackRows(chunk.text))]);
    return r.rowCount;
  }
}

/**
 * Inserts prepared events in order (seq follows chain order); returns how many were new.
 * `afterChunk` runs inside the caller's transaction after each chunk with the running count: a
 * failure injector for tests (a throw there is a crash in the middle of a range).
 */
export async function insertPrepared(
  tx: Queryable,
  prepared: PreparedEvents,
  afterChunk?: (written: number) => void | Promise<void>,
): Promise<number> {
  let inserted = 0;
  let written = 0;
  await lockPartnerCounters(tx, prepared.partners);
  for (const chunk of prepared.chunks) {
    inserted += await insertChunk(tx, chunk);
    written += chunk.count;
    await afterChunk?.(written);
  }
  return inserted;
}

/** prepareEvents then insertPrepared, for callers with nothing to overlap. */
export function insertEvents(
  tx: Queryable,
  events: readonly IndexedEvent[],
  options: { chunk?: number; afterChunk?: (written: number) => void | Promise<void> } = {},
): Promise<number> {
  return insertPrepared(tx, prepareEvents(events, options.chunk), options.afterChunk);
}
