/**
 * Repository of stored events. An event is written once: the dedupe key is unique, so writing the
 * same chain log or the same day's alert twice stores nothing the second time. A chain log's key is
 * (event_type, chain_id, tx_hash, log_index), unique as columns; the indexer writes no dedupe_key
 * text for it, and reads rebuild the text. The payload is kept
 * as the exact JSON text that webhooks sign and send.
 */
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';
import type { Environment } from './products.ts';

export interface NewEvent {
  partnerId: string;
  environment: Environment;
  productId: string | null;
  eventType: string;
  dedupeKey: string;
  payload: Record<string, unknown>;
  occurredAt: Date;
  chain?: {
    chainId: number;
    blockNumber: bigint;
    blockHash: `0x${string}`;
    txHash: `0x${string}`;
    logIndex: number;
  };
}

export interface StoredEvent {
  id: string;
  seq: bigint;
  partnerId: string;
  environment: Environment;
  productId: string | null;
  eventType: string;
  dedupeKey: string;
  /** The exact JSON text of the payload. */
  payload: string;
  occurredAt: Date;
  chainId: number | null;
  blockNumber: bigint | null;
  txHash: string | null;
  logIndex: number | null;
  /** Strictly increasing per partner environment (migration 0042); null for a test event. */
  partnerSeq: bigint | null;
  /** Strictly increasing per product; null for a test event or an event of no product. */
  productSeq: bigint | null;
  /** When the event was stored (and so became deliverable). */
  createdAt: Date;
}

/** What the events feed asks for: one partner environment's events, in partner_seq order. */
export interface FeedQuery {
  partnerId: string;
  environment: Environment;
  /** `asc`: partner_seq above `after` (from a cursor forward); `desc`: below `before` (newest first). */
  order: 'asc' | 'desc';
  after?: bigint;
  before?: bigint;
  types?: readonly string[];
  productId?: string;
  occurredSince?: Date;
  occurredBefore?: Date;
  /** Retention: events stored before this are not listed. */
  storedSince: Date;
  limit: number;
}

interface EventRow {
  id: string;
  seq: string;
  partner_id: string;
  environment: Environment;
  product_id: string | null;
  event_type: string;
  /** Null for chain-log events, whose key is their columns (events_chain_log). */
  dedupe_key: string | null;
  payload: string;
  occurred_at: Date;
  chain_id: string | null;
  block_number: string | null;
  tx_hash: string | null;
  log_index: number | null;
  partner_seq: string | null;
  product_seq: string | null;
  created_at: Date;
}

const toEvent = (r: EventRow): StoredEvent => ({
  id: r.id,
  seq: BigInt(r.seq),
  partnerId: r.partner_id,
  environment: r.environment,
  productId: r.product_id,
  eventType: r.event_type,
  dedupeKey:
    r.dedupe_key ??
    dedupeKey.chainLog(r.event_type, Number(r.chain_id), r.tx_hash ?? '', r.log_index ?? 0),
  payload: r.payload,
  occurredAt: r.occurred_at,
  chainId: r.chain_id === null ? null : Number(r.chain_id),
  blockNumber: r.block_number === null ? null : BigInt(r.block_number),
  txHash: r.tx_hash,
  logIndex: r.log_index,
  partnerSeq: r.partner_seq === null ? null : BigInt(r.partner_seq),
  productSeq: r.product_seq === null ? null : BigInt(r.product_seq),
  createdAt: r.created_at,
});

/** Dedupe keys of the spec's "Deduplication keys" table. */
export const dedupeKey = {
  chainLog: (eventType: string, chainId: number, txHash: string, logIndex: number) =>
    `${eventType}:${chainId}:${txHash.toLowerCase()}:${logIndex}`,
  daily: (eventType: string, slug: string, date: string) => `${eventType}:${slug}:${date}`,
  /** vault_pause is re-emitted once per UTC day while paused, so the day is part of the key. */
  pause: (slug: string, date: string) => `vault_pause:${slug}:${date}`,
  productDeployed: (slug: string) => `product.deployed:${slug}`,
};

export function createEventsRepo(db: Queryable) {
  return {
    /** Stores the event unless its dedupe key exists; returns it when it was new. */
    async insert(e: NewEvent): Promise<StoredEvent | undefined> {
      const { rows } = await db.query<EventRow>(
        `INSERT INTO events (id, partner_id, environment, product_id, event_type, dedupe_key, payload,
           occurred_at, chain_id, block_number, block_hash, tx_hash, log_index)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
         ON CONFLICT DO NOTHING
         RETURNING *`,
        [
          newId('evt'),
          e.partnerId,
          e.environment,
          e.productId,
          e.eventType,
          e.dedupeKey,
          JSON.stringify(e.payload),
          e.occurredAt,
          e.chain?.chainId ?? null,
          e.chain?.blockNumber.toString() ?? null,
          e.chain?.blockHash ?? null,
          e.chain?.txHash.toLowerCase() ?? null,
          e.chain?.logIndex ?? null,
        ],
      );
      return rows[0] && toEvent(rows[0]);
    },

    async findById(id: string): Promise<StoredEvent | undefined> {
      const { rows } = await db.query<EventRow>('SELECT * FROM events WHERE id = $1', [id]);
      return rows[0] && toEvent(rows[0]);
    },

    async list(filter: { eventType?: string; productId?: string } = {}): Promise<StoredEvent[]> {
      const { rows } = await db.query<EventRow>(
        `SELECT * FROM events
         WHERE ($1::text IS NULL OR event_type = $1) AND ($2::text IS NULL OR product_id = $2)
         ORDER BY seq`,
        [filter.eventType ?? null, filter.productId ?? null],
      );
      return rows.map(toEvent);
    },

    /**
     * A page of the events feed. Test events (`ping`) have no partner_seq and are never listed.
     * partner_seq becomes visible in order (migration 0042), so paging forward with `after` misses
     * no event that commits later.
     */
    async feed(q: FeedQuery): Promise<StoredEvent[]> {
      const { rows } = await db.query<EventRow>(
        `SELECT * FROM events
         WHERE partner_id = $1 AND environment = $2 AND partner_seq IS NOT NULL
           AND ($3::bigint IS NULL OR partner_seq > $3)
           AND ($4::bigint IS NULL OR partner_seq < $4)
           AND ($5::json IS NULL OR event_type IN (SELECT json_array_elements_text($5::json)))
           AND ($6::text IS NULL OR product_id = $6)
           AND ($7::timestamptz IS NULL OR occurred_at >= $7)
           AND ($8::timestamptz IS NULL OR occurred_at < $8)
           AND created_at >= $9
         ORDER BY partner_seq ${q.order === 'asc' ? 'ASC' : 'DESC'}
         LIMIT $10`,
        [
          q.partnerId,
          q.environment,
          q.after?.toString() ?? null,
          q.before?.toString() ?? null,
          q.types && q.types.length > 0 ? JSON.stringify(q.types) : null,
          q.productId ?? null,
          q.occurredSince ?? null,
          q.occurredBefore ?? null,
          q.storedSince,
          q.limit,
        ],
      );
      return rows.map(toEvent);
    },

    /** The newest partner_seq given in a partner environment (0 before its first event). */
    async lastPartnerSeq(partnerId: string, environment: Environment): Promise<bigint> {
      const { rows } = await db.query<{ last_value: string }>(
        `SELECT last_value FROM event_sequences
         WHERE partner_id = $1 AND environment = $2 AND product_id = ''`,
        [partnerId, environment],
      );
      return rows[0] ? BigInt(rows[0].last_value) : 0n;
    },
  };
}

export type EventsRepo = ReturnType<typeof createEventsRepo>;
