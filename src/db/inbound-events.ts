/**
 * Repository of the events partners push to the inbound webhook. An event is stored once per
 * partner and Idempotency-Key: the store is one `INSERT … ON CONFLICT DO NOTHING`, so concurrent
 * requests with the same key cannot both store (on PostgreSQL the later ones wait on the first
 * insert's unique-index entry, then see its row). A submitted transaction is linked to the
 * lifecycle event of its log in the same transaction when the indexer has already stored it;
 * otherwise the `events_link_inbound` trigger links it when the indexer does.
 */
import type { Database, Queryable } from './client.ts';
import type { Environment } from './products.ts';

export interface NewInboundEvent {
  partnerId: string;
  environment: Environment;
  idempotencyKey: string;
  eventType: string;
  /** SHA-256 of the exact bytes received. */
  bodySha256: Buffer;
  /** The exact body received, as UTF-8 text. */
  body: string;
  occurredAt: Date;
  /** deposit.submitted / redeem.submitted: the transaction to watch (txHash lowercase). */
  tx?: { productId: string; chainId: number; txHash: string };
}

export interface InboundEvent {
  /** The acknowledgement's `event_id`. */
  id: number;
  partnerId: string;
  environment: Environment;
  idempotencyKey: string;
  eventType: string;
  bodySha256: Buffer;
  body: string;
  occurredAt: Date;
  productId: string | null;
  chainId: number | null;
  txHash: string | null;
  linkedEventId: string | null;
  linkedAt: Date | null;
  receivedAt: Date;
  /** Later requests with the same key and the same body: absorbed, answered `duplicate: true`. */
  duplicateCount: number;
  lastDuplicateAt: Date | null;
  /** Later requests with the same key and another body: refused with 409 idempotency_conflict. */
  conflictCount: number;
  lastConflictAt: Date | null;
}

export type StoreResult =
  /** The event was new and is now stored. */
  | { outcome: 'stored'; event: InboundEvent }
  /** The key was seen with the same body, event type and environment: the original event. */
  | { outcome: 'duplicate'; event: InboundEvent }
  /** The key was seen with another body, event type or environment. */
  | { outcome: 'conflict'; event: InboundEvent };

interface Row {
  id: string;
  partner_id: string;
  environment: Environment;
  idempotency_key: string;
  event_type: string;
  body_sha256: Uint8Array;
  body: string;
  occurred_at: Date;
  product_id: string | null;
  chain_id: string | null;
  tx_hash: string | null;
  linked_event_id: string | null;
  linked_at: Date | null;
  received_at: Date;
  duplicate_count: number;
  last_duplicate_at: Date | null;
  conflict_count: number;
  last_conflict_at: Date | null;
}

const toEvent = (r: Row): InboundEvent => ({
  id: Number(r.id),
  partnerId: r.partner_id,
  environment: r.environment,
  idempotencyKey: r.idempotency_key,
  eventType: r.event_type,
  bodySha256: Buffer.from(r.body_sha256),
  body: r.body,
  occurredAt: r.occurred_at,
  productId: r.product_id,
  chainId: r.chain_id === null ? null : Number(r.chain_id),
  txHash: r.tx_hash,
  linkedEventId: r.linked_event_id,
  linkedAt: r.linked_at,
  receivedAt: r.received_at,
  duplicateCount: r.duplicate_count,
  lastDuplicateAt: r.last_duplicate_at,
  conflictCount: r.conflict_count,
  lastConflictAt: r.last_conflict_at,
});

/**
 * Links every submitted transaction whose lifecycle event is stored but not linked yet (the
 * inbound linker's sweep: src/webhooks/inbound-linker.ts).
 */
export async function linkPendingInbound(db: Queryable): Promise<void> {
  await db.query('SELECT link_inbound_events(NULL)');
}

/** Same request: same bytes, same event type, same environment (keys span both environments). */
const sameRequest = (stored: InboundEvent, e: NewInboundEvent) =>
  stored.bodySha256.equals(e.bodySha256) &&
  stored.eventType === e.eventType &&
  stored.environment === e.environment;

export function createInboundEventsRepo(
  db: Pick<Database, 'query' | 'exec' | 'copyFrom' | 'transaction'>,
): InboundEventsRepo {
  const find = async (q: Queryable, partnerId: string, idempotencyKey: string) => {
    const { rows } = await q.query<Row>(
      'SELECT * FROM inbound_events WHERE partner_id = $1 AND idempotency_key = $2',
      [partnerId, idempotencyKey],
    );
    return rows[0] && toEvent(rows[0]);
  };

  const repo: InboundEventsRepo = {
    async store(e) {
      // One autocommitted statement decides: a concurrent request with the same key waits on the
      // unique index until this one commits, then conflicts and reads it (duplicate or 409).
      const { rows } = await db.query<Row>(
        `INSERT INTO inbound_events (partner_id, environment, idempotency_key, event_type,
           body_sha256, body, occurred_at, product_id, chain_id, tx_hash)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)
         ON CONFLICT (partner_id, idempotency_key) DO NOTHING
         RETURNING *`,
        [
          e.partnerId,
          e.environment,
          e.idempotencyKey,
          e.eventType,
          e.bodySha256,
          e.body,
          e.occurredAt,
          e.tx?.productId ?? null,
          e.tx?.chainId ?? null,
          e.tx?.txHash ?? null,
        ],
      );
      const inserted = rows[0];
      if (inserted) {
        if (!e.tx) return { outcome: 'stored', event: toEvent(inserted) };
        // A log the indexer already stored links at once; later ones link by trigger (and the
        // worker's sweep, should this statement fail: linking is idempotent).
        await db.query('SELECT link_inbound_events(ARRAY[$1]::bigint[])', [inserted.id]);
        const linked = await db.query<Row>('SELECT * FROM inbound_events WHERE id = $1', [
          inserted.id,
        ]);
        return { outcome: 'stored', event: toEvent(linked.rows[0] ?? inserted) };
      }
      const existing = await find(db, e.partnerId, e.idempotencyKey);
      if (!existing) throw new Error('inbound event conflict without a stored row');
      const outcome = sameRequest(existing, e) ? 'duplicate' : 'conflict';
      // Counted on the event repeated (migration 0028), for the portal's inbound page.
      const counted = await db.query<Row>(
        outcome === 'duplicate'
          ? `UPDATE inbound_events SET duplicate_count = duplicate_count + 1,
               last_duplicate_at = now() WHERE id = $1 RETURNING *`
          : `UPDATE inbound_events SET conflict_count = conflict_count + 1,
               last_conflict_at = now() WHERE id = $1 RETURNING *`,
        [existing.id],
      );
      return { outcome, event: counted.rows[0] ? toEvent(counted.rows[0]) : existing };
    },

    async storeMany(events) {
      if (events.length === 0) return [];
      // One statement, one commit for the whole batch (src/db/coalesce.ts feeds it).
      // Only what the request did not send comes back: the body (up to 64 KB) is not read again.
      const { rows } = await db.query<
        Pick<Row, 'id' | 'partner_id' | 'idempotency_key' | 'event_type' | 'body_sha256'> & {
          received_at: Date;
        }
      >(
        `INSERT INTO inbound_events (partner_id, environment, idempotency_key, event_type,
           body_sha256, body, occurred_at, product_id, chain_id, tx_hash)
         SELECT p, env, k, t, decode(h, 'hex'), b, o, pr, c, tx
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::timestamptz[], $8::text[], $9::bigint[], $10::text[])
                  WITH ORDINALITY AS r(p, env, k, t, h, b, o, pr, c, tx, n)
          ORDER BY n
         ON CONFLICT (partner_id, idempotency_key) DO NOTHING
         RETURNING id, partner_id, idempotency_key, event_type, body_sha256, received_at`,
        [
          events.map((e) => e.partnerId),
          events.map((e) => e.environment),
          events.map((e) => e.idempotencyKey),
          events.map((e) => e.eventType),
          events.map((e) => e.bodySha256.toString('hex')),
          events.map((e) => e.body),
          events.map((e) => e.occurredAt.toISOString()),
          events.map((e) => e.tx?.productId ?? null),
          events.map((e) => (e.tx ? String(e.tx.chainId) : null)),
          events.map((e) => e.tx?.txHash ?? null),
        ],
      );
      // Each stored row goes to the first event of the batch it was made from; a later event
      // with the same key (in this batch or before it) takes the one-by-one path below.
      const results: (StoreResult | undefined)[] = events.map(() => undefined);
      const byKey = new Map<string, (typeof rows)[number]>();
      for (const r of rows) byKey.set(`${r.partner_id}\u0000${r.idempotency_key}`, r);
      events.forEach((e, i) => {
        const key = `${e.partnerId}\u0000${e.idempotencyKey}`;
        const r = byKey.get(key);
        if (r && Buffer.from(r.body_sha256).equals(e.bodySha256) && r.event_type === e.eventType) {
          byKey.delete(key);
          results[i] = {
            outcome: 'stored',
            event: {
              id: Number(r.id),
              partnerId: e.partnerId,
              environment: e.environment,
              idempotencyKey: e.idempotencyKey,
              eventType: e.eventType,
              bodySha256: e.bodySha256,
              body: e.body,
              occurredAt: e.occurredAt,
              productId: e.tx?.productId ?? null,
              chainId: e.tx?.chainId ?? null,
              txHash: e.tx?.txHash ?? null,
              linkedEventId: null,
              linkedAt: null,
              receivedAt: r.received_at,
              duplicateCount: 0,
              lastDuplicateAt: null,
              conflictCount: 0,
              lastConflictAt: null,
            },
          };
        }
      });
      // Submitted transactions are linked to their lifecycle events at once, as store() does.
      const toLink = results.flatMap((r, i) => (r && events[i]?.tx ? [{ i, id: r.event.id }] : []));
      if (toLink.length > 0) {
        const ids = toLink.map((l) => String(l.id));
        await db.query('SELECT link_inbound_events($1::bigint[])', [ids]);
        const linked = await db.query<Row>(
          'SELECT * FROM inbound_events WHERE id = ANY($1::bigint[])',
          [ids],
        );
        const byId = new Map(linked.rows.map((r) => [Number(r.id), r]));
        for (const { i, id } of toLink) {
          const r = byId.get(id);
          if (r) results[i] = { outcome: 'stored', event: toEvent(r) };
        }
      }
      const out: StoreResult[] = [];
      for (const [i, e] of events.entries()) out.push(results[i] ?? (await repo.store(e)));
      return out;
    },

    find: (partnerId, idempotencyKey) => find(db, partnerId, idempotencyKey),

    async findById(id) {
      const { rows } = await db.query<Row>('SELECT * FROM inbound_events WHERE id = $1', [id]);
      return rows[0] && toEvent(rows[0]);
    },

    async recent(partnerId, environment, limit) {
      // Without the body (up to 64 KB each): the list shows what the columns say.
      const { rows } = await db.query<Row>(
        `SELECT id, partner_id, environment, idempotency_key, event_type, ''::bytea AS body_sha256,
                '' AS body, occurred_at, product_id, chain_id, tx_hash, linked_event_id, linked_at,
                received_at, duplicate_count, last_duplicate_at, conflict_count, last_conflict_at
         FROM inbound_events WHERE partner_id = $1 AND environment = $2
         ORDER BY id DESC LIMIT $3`,
        [partnerId, environment, limit],
      );
      return rows.map(toEvent);
    },

    async linkedTo(eventId) {
      const { rows } = await db.query<Row>(
        'SELECT * FROM inbound_events WHERE linked_event_id = $1 ORDER BY id',
        [eventId],
      );
      return rows.map(toEvent);
    },

    async list(filter = {}) {
      const { rows } = await db.query<Row>(
        `SELECT * FROM inbound_events
         WHERE ($1::text IS NULL OR partner_id = $1)
           AND ($2::text IS NULL OR environment = $2)
           AND ($3::text IS NULL OR event_type = $3)
         ORDER BY id`,
        [filter.partnerId ?? null, filter.environment ?? null, filter.eventType ?? null],
      );
      return rows.map(toEvent);
    },
  };
  return repo;
}

export interface InboundEventsRepo {
  /**
   * Stores the event unless its Idempotency-Key exists for the partner; otherwise answers whether
   * the stored one is the same request (duplicate) or not (conflict). Never stores twice.
   */
  store(e: NewInboundEvent): Promise<StoreResult>;
  /**
   * store() for many events in one statement and one commit; each gets the result store() would
   * give it, in order (events whose key already exists take store()'s own path).
   */
  storeMany(events: NewInboundEvent[]): Promise<StoreResult[]>;
  find(partnerId: string, idempotencyKey: string): Promise<InboundEvent | undefined>;
  findById(id: number): Promise<InboundEvent | undefined>;
  /** The newest `limit` events of a partner's environment, newest first, without their bodies. */
  recent(partnerId: string, environment: Environment, limit: number): Promise<InboundEvent[]>;
  /** The events linked to a lifecycle event (the transaction they announced). */
  linkedTo(eventId: string): Promise<InboundEvent[]>;
  list(filter?: {
    partnerId?: string;
    environment?: Environment;
    eventType?: string;
  }): Promise<InboundEvent[]>;
}
