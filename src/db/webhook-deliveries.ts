/**
 * Repository of the outbound delivery log, for operators: listing deliveries, and manual replays.
 * A replay never touches an existing row: it adds a new delivery (pending, 3 fresh attempts, due at
 * once) of the same stored event, linked by `replay_of` to the delivery it repeats. The
 * dispatcher's own queries (claiming due rows, recording attempts) live in src/webhooks/.
 */
import { BaseError } from '../errors.ts';
import { newId } from '../ids.ts';
import { outboundPayload } from '../webhooks/event-catalogue.ts';
import type { Database, Queryable } from './client.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'failed'];

export interface WebhookDelivery {
  id: string;
  eventId: string;
  eventType: string;
  destinationId: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  lastAttemptAt: Date | null;
  lastResponseCode: number | null;
  lastResponseBody: string | null;
  lastError: string | null;
  /** The delivery this one replays, if it is a replay. */
  replayOf: string | null;
  createdAt: Date;
  updatedAt: Date;
  deliveredAt: Date | null;
  failedAt: Date | null;
}

interface Row {
  id: string;
  event_id: string;
  event_type: string;
  destination_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  last_response_code: number | null;
  last_response_body: string | null;
  last_error: string | null;
  replay_of: string | null;
  created_at: Date;
  updated_at: Date;
  delivered_at: Date | null;
  failed_at: Date | null;
}

const toDelivery = (r: Row): WebhookDelivery => ({
  id: r.id,
  eventId: r.event_id,
  eventType: r.event_type,
  destinationId: r.destination_id,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lastAttemptAt: r.last_attempt_at,
  lastResponseCode: r.last_response_code,
  lastResponseBody: r.last_response_body,
  lastError: r.last_error,
  replayOf: r.replay_of,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deliveredAt: r.delivered_at,
  failedAt: r.failed_at,
});

export type ReplayErrorCode =
  | 'event_not_found'
  | 'destination_not_found'
  | 'destination_removed'
  | 'destination_mismatch'
  | 'not_subscribed'
  | 'destination_disabled';

/** A replay that cannot be made; `code` says why. */
export class WebhookReplayError extends BaseError<ReplayErrorCode> {
  override name = 'WebhookReplayError';
  constructor(message: string, code: ReplayErrorCode) {
    super(code, message);
  }
}

export const DEFAULT_DELIVERY_LIST_LIMIT = 100;
export const MAX_DELIVERY_LIST_LIMIT = 1000;

/** Inserts the rows of `insertSql` (an INSERT … RETURNING *) and returns them with their type. */
const withEventType = (insertSql: string) =>
  `WITH inserted AS (${insertSql})
   SELECT inserted.*, e.event_type FROM inserted JOIN events e ON e.id = inserted.event_id
   ORDER BY e.seq, inserted.destination_id`;

interface DestinationRow {
  id: string;
  partner_id: string;
  environment: string;
  event_types: string[] | null;
  removed_at: Date | null;
  disabled_at: Date | null;
}

/** The destination's row (locked as asked, in a transaction); an unknown id is refused. */
async function destinationRow(
  q: Queryable,
  id: string,
  lock: '' | 'FOR SHARE' | 'FOR UPDATE',
): Promise<DestinationRow> {
  const { rows } = await q.query<DestinationRow>(
    `SELECT id, partner_id, environment, event_types, removed_at, disabled_at
     FROM webhook_destinations WHERE id = $1 ${lock}`,
    [id],
  );
  const d = rows[0];
  if (!d)
    throw new WebhookReplayError(`no webhook destination with id ${id}`, 'destination_not_found');
  return d;
}

const removedError = (id: string) =>
  new WebhookReplayError(`destination ${id} was removed`, 'destination_removed');

const disabledError = (id: string) =>
  new WebhookReplayError(
    `destination ${id} is disabled: re-enable it first (that replays what failed meanwhile)`,
    'destination_disabled',
  );

/** One delivery as its detail page shows it: the event's payload and every attempt so far. */
export interface DeliveryDetail {
  id: string;
  eventId: string;
  eventType: string;
  /** The exact JSON text sent. */
  payload: string;
  status: DeliveryStatus;
  createdAt: Date;
  replayOf: string | null;
  /** When the dispatcher next sends a pending delivery. */
  nextAttemptAt: Date;
  /** The event's numbers, sent as `X-Service-Sequence` and `X-Service-Partner-Sequence`. */
  productSeq: bigint | null;
  partnerSeq: bigint | null;
  attempts: {
    attempt: number;
    attemptedAt: Date;
    ok: boolean;
    statusCode: number | null;
    durationMs: number;
    responseBody: string | null;
    error: string | null;
  }[];
}

export function createWebhookDeliveriesRepo(db: Queryable | Database) {
  /** In one transaction when db can open one; as is when it already is one. */
  const inTransaction = <T>(fn: (q: Queryable) => Promise<T>): Promise<T> =>
    'transaction' in db ? db.transaction(fn) : fn(db);

  return {
    /**
     * Sends a test event (`ping`) to one destination: a stored event of its partner environment
     * and one delivery to that destination only (the fan-out trigger skips pings), sent by the
     * dispatcher like any other, whatever event types the destination subscribes to. The portal's
     * "send a test event" and `webhook ping` call this. A removed destination cannot be pinged; a
     * disabled one can (to check it before re-enabling it).
     */
    async enqueuePing(
      destinationId: string,
      now: Date = new Date(),
    ): Promise<{ eventId: string; delivery: WebhookDelivery }> {
      return inTransaction(async (tx) => {
        const d = await destinationRow(tx, destinationId, 'FOR SHARE');
        if (d.removed_at) throw removedError(destinationId);
        const eventId = newId('evt');
        const payload = outboundPayload('ping', {
          destination_id: destinationId,
          sent_at: now.toISOString(),
        });
        await tx.query(
          `INSERT INTO events (id, partner_id, environment, event_type, dedupe_key, payload,
             occurred_at)
           VALUES ($1, $2, $3, 'ping', $4, $5, $6)`,
          [eventId, d.partner_id, d.environment, `ping:${eventId}`, JSON.stringify(payload), now],
        );
        const { rows } = await tx.query<Row>(
          withEventType(
            `INSERT INTO webhook_deliveries (event_id, destination_id) VALUES ($1, $2)
             RETURNING *`,
          ),
          [eventId, destinationId],
        );
        return { eventId, delivery: toDelivery(rows[0] as Row) };
      });
    },

    /**
     * Deliveries, newest first, filtered by destination, event, status, event type and creation
     * time. `before` pages back: only deliveries older, in this order, than the one it names (none
     * when it names no delivery).
     */
    async list(
      filter: {
        destinationId?: string;
        eventId?: string;
        status?: DeliveryStatus;
        eventType?: string;
        createdSince?: Date;
        before?: string;
        limit?: number;
      } = {},
    ): Promise<WebhookDelivery[]> {
      const limit = Math.min(
        Math.max(1, Math.trunc(filter.limit ?? DEFAULT_DELIVERY_LIST_LIMIT)),
        MAX_DELIVERY_LIST_LIMIT,
      );
      const { rows } = await db.query<Row>(
        `SELECT d.*, e.event_type
         FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
         WHERE ($1::text IS NULL OR d.destination_id = $1) AND ($2::text IS NULL OR d.event_id = $2)
           AND ($3::text IS NULL OR d.status = $3)
           AND ($5::text IS NULL OR e.event_type = $5)
           AND ($6::timestamptz IS NULL OR d.created_at >= $6)
           AND ($7::text IS NULL OR (d.created_at, e.seq, d.id) < (
             SELECT c.created_at, ce.seq, c.id
             FROM webhook_deliveries c JOIN events ce ON ce.id = c.event_id WHERE c.id = $7))
           -- Implied by the line above; said on its own so the index on (destination_id,
           -- created_at) starts at the cursor instead of reading every newer delivery.
           AND ($7::text IS NULL OR d.created_at <= (
             SELECT c.created_at FROM webhook_deliveries c WHERE c.id = $7))
         ORDER BY d.created_at DESC, e.seq DESC, d.id DESC
         LIMIT $4`,
        [
          filter.destinationId ?? null,
          filter.eventId ?? null,
          filter.status ?? null,
          limit,
          filter.eventType ?? null,
          filter.createdSince ?? null,
          filter.before ?? null,
        ],
      );
      return rows.map(toDelivery);
    },

    /**
     * Replays a stored event: a new delivery to the given destination, or, without one, to every
     * active destination of the event's partner environment that subscribes to its type. Each new
     * row's `replay_of` is the latest earlier delivery of the event to that destination, if any.
     * A named destination must be active, of the event's partner environment, and subscribe to
     * the event's type. Returns the new deliveries (none when no destination matches).
     */
    async replayEvent(eventId: string, destinationId?: string): Promise<WebhookDelivery[]> {
      const { rows: events } = await db.query<{
        partner_id: string;
        environment: string;
        event_type: string;
        payload: string;
      }>('SELECT partner_id, environment, event_type, payload FROM events WHERE id = $1', [
        eventId,
      ]);
      const event = events[0];
      if (!event) throw new WebhookReplayError(`no event with id ${eventId}`, 'event_not_found');
      // A test event goes only to the destination it was made for.
      const pingedDestination =
        event.event_type === 'ping'
          ? (JSON.parse(event.payload) as { destination_id: string }).destination_id
          : null;
      if (destinationId !== undefined && pingedDestination !== null) {
        if (destinationId !== pingedDestination) {
          throw new WebhookReplayError(
            `test event ${eventId} was sent to ${pingedDestination} and is replayed only there`,
            'destination_mismatch',
          );
        }
      }
      if (destinationId !== undefined) {
        const d = await destinationRow(db, destinationId, '');
        if (d.partner_id !== event.partner_id || d.environment !== event.environment) {
          throw new WebhookReplayError(
            `destination ${destinationId} does not belong to the partner environment of event ${eventId}`,
            'destination_mismatch',
          );
        }
        if (d.removed_at) throw removedError(destinationId);
        if (d.disabled_at) throw disabledError(destinationId);
        if (
          pingedDestination === null &&
          d.event_types &&
          !d.event_types.includes(event.event_type)
        ) {
          throw new WebhookReplayError(
            `destination ${destinationId} does not subscribe to ${event.event_type} events`,
            'not_subscribed',
          );
        }
      }
      // One statement: a destination removed meanwhile gets nothing (removed_at is re-read here).
      const { rows } = await db.query<Row>(
        withEventType(
          `INSERT INTO webhook_deliveries (event_id, destination_id, replay_of)
           SELECT e.id, d.id,
                  (SELECT p.id FROM webhook_deliveries p
                   WHERE p.event_id = e.id AND p.destination_id = d.id
                   ORDER BY p.created_at DESC, p.id DESC LIMIT 1)
           FROM events e
           JOIN webhook_destinations d
             ON d.partner_id = e.partner_id AND d.environment = e.environment
            AND d.removed_at IS NULL AND d.disabled_at IS NULL
            AND (d.event_types IS NULL OR e.event_type = ANY (d.event_types) OR $3::text IS NOT NULL)
           WHERE e.id = $1 AND ($2::text IS NULL OR d.id = $2) AND ($3::text IS NULL OR d.id = $3)
           RETURNING *`,
        ),
        [eventId, destinationId ?? null, pingedDestination],
      );
      if (destinationId !== undefined && rows.length === 0) throw removedError(destinationId);
      return rows.map(toDelivery);
    },

    /**
     * Replays what failed at a destination since a moment: one new delivery per event that has a
     * failed delivery to it created at or after `since`, except events already delivered or pending
     * there again after their latest failure. In one transaction that locks the destination row,
     * so concurrent replays (or a removal) of the same destination run one after the other and
     * never replay an event twice.
     */
    async replayFailed(
      destinationId: string,
      since: Date,
    ): Promise<{ count: number; deliveries: WebhookDelivery[] }> {
      return inTransaction(async (tx) => {
        const d = await destinationRow(tx, destinationId, 'FOR UPDATE');
        if (d.removed_at) throw removedError(destinationId);
        if (d.disabled_at) throw disabledError(destinationId);
        const { rows } = await tx.query<Row>(
          withEventType(
            `INSERT INTO webhook_deliveries (event_id, destination_id, replay_of)
             SELECT f.event_id, f.destination_id, f.id
             FROM (
               SELECT DISTINCT ON (event_id) id, event_id, destination_id, created_at
               FROM webhook_deliveries
               WHERE destination_id = $1 AND status = 'failed' AND created_at >= $2
               ORDER BY event_id, created_at DESC, id DESC
             ) f
             WHERE NOT EXISTS (
               SELECT 1 FROM webhook_deliveries n
               WHERE n.destination_id = f.destination_id AND n.event_id = f.event_id
                 AND n.status IN ('pending', 'delivered') AND n.created_at >= f.created_at
             )
             RETURNING *`,
          ),
          [destinationId, since],
        );
        return { count: rows.length, deliveries: rows.map(toDelivery) };
      });
    },

    /** The delivery with its payload and attempts, when it is a delivery to that destination. */
    async detail(deliveryId: string, destinationId: string): Promise<DeliveryDetail | undefined> {
      const { rows } = await db.query<{
        id: string;
        event_id: string;
        event_type: string;
        payload: string;
        status: DeliveryStatus;
        created_at: Date;
        replay_of: string | null;
        next_attempt_at: Date;
        product_seq: string | null;
        partner_seq: string | null;
      }>(
        `SELECT w.id, w.event_id, e.event_type, e.payload, w.status, w.created_at, w.replay_of,
                w.next_attempt_at, e.product_seq, e.partner_seq
         FROM webhook_deliveries w JOIN events e ON e.id = w.event_id
         WHERE w.id = $1 AND w.destination_id = $2`,
        [deliveryId, destinationId],
      );
      const r = rows[0];
      if (!r) return undefined;
      const { rows: attempts } = await db.query<{
        attempt: number;
        attempted_at: Date;
        ok: boolean;
        status_code: number | null;
        duration_ms: number;
        response_body: string | null;
        error: string | null;
      }>(
        `SELECT attempt, attempted_at, ok, status_code, duration_ms, response_body, error
         FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt`,
        [r.id],
      );
      return {
        id: r.id,
        eventId: r.event_id,
        eventType: r.event_type,
        payload: r.payload,
        status: r.status,
        createdAt: r.created_at,
        replayOf: r.replay_of,
        nextAttemptAt: r.next_attempt_at,
        productSeq: r.product_seq === null ? null : BigInt(r.product_seq),
        partnerSeq: r.partner_seq === null ? null : BigInt(r.partner_seq),
        attempts: attempts.map((a) => ({
          attempt: a.attempt,
          attemptedAt: a.attempted_at,
          ok: a.ok,
          statusCode: a.status_code,
          durationMs: a.duration_ms,
          responseBody: a.response_body,
          error: a.error,
        })),
      };
    },
  };
}

export type WebhookDeliveriesRepo = ReturnType<typeof createWebhookDeliveriesRepo>;
