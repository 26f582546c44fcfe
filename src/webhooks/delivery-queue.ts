/**
 * The outbound delivery queue, on the webhook_deliveries table (an outbox: the rows are committed
 * with their event, by the fan-out trigger, before anything is sent). Portable across PGlite and
 * PostgreSQL; several workers share it through `FOR UPDATE SKIP LOCKED`.
 *
 * The attempt protocol, which is what makes crashes safe:
 * 1. claim: one statement picks due rows, counts the attempt (attempts + 1) and leases the row
 *    (next_attempt_at = now + lease), and commits — before anything is sent. A claimed attempt is
 *    never claimed again, so no attempt is sent twice, and attempts never pass three.
 * 2. send.
 * 3. record: only if the row still carries that attempt (a worker whose lease ran out and whose
 *    attempt was taken over cannot overwrite the newer one): delivered, failed after the third
 *    attempt, or pending with the next attempt's due time.
 * A worker that dies between 1 and 3 leaves the row leased; when the lease ends the next attempt
 * is claimed (or, after the third, the row is failed with "outcome unknown").
 */
import type { Queryable } from '../db/client.ts';

export const MAX_ATTEMPTS = 3;

export interface ClaimedDelivery {
  id: string;
  /** 1, 2 or 3: the attempt this claim is. */
  attempt: number;
  eventId: string;
  eventType: string;
  /** The exact JSON text to send and sign. */
  payload: string;
  destinationId: string;
  url: string;
  secretCiphertext: string;
  /** When the event was committed (for latency figures). */
  eventCreatedAt: Date;
}

export interface AttemptOutcome {
  id: string;
  attempt: number;
  ok: boolean;
  statusCode: number | null;
  bodyExcerpt: string | null;
  error: string | null;
  /** For a failed attempt that is not the last: how long until the next one. */
  retryInMs: number;
}

interface ClaimRow {
  id: string;
  attempts: number;
  event_id: string;
  event_type: string;
  payload: string;
  destination_id: string;
  url: string;
  secret_ciphertext: string;
  event_created_at: Date;
}

export function createDeliveryQueue(db: Queryable) {
  return {
    /** Claims up to `limit` due deliveries for one attempt each, leased for `leaseMs`. */
    async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
      const { rows } = await db.query<ClaimRow>(
        `WITH due AS (
           SELECT id FROM webhook_deliveries
           WHERE status = 'pending' AND next_attempt_at <= now() AND attempts < ${MAX_ATTEMPTS}
           ORDER BY next_attempt_at
           LIMIT $1
           FOR UPDATE SKIP LOCKED
         )
         UPDATE webhook_deliveries d
         SET attempts = d.attempts + 1,
             next_attempt_at = now() + $2 * interval '1 millisecond',
             last_attempt_at = now(),
             updated_at = now()
         FROM due, events e, webhook_destinations w
         WHERE d.id = due.id AND e.id = d.event_id AND w.id = d.destination_id
         RETURNING d.id, d.attempts, d.event_id, e.event_type, e.payload, d.destination_id, w.url,
                   w.secret_ciphertext, e.created_at AS event_created_at`,
        [limit, leaseMs],
      );
      return rows.map((r) => ({
        id: r.id,
        attempt: r.attempts,
        eventId: r.event_id,
        eventType: r.event_type,
        payload: r.payload,
        destinationId: r.destination_id,
        url: r.url,
        secretCiphertext: r.secret_ciphertext,
        eventCreatedAt: r.event_created_at,
      }));
    },

    /** Records the outcomes of claimed attempts, in one statement. Returns how many applied. */
    async record(outcomes: readonly AttemptOutcome[]): Promise<number> {
      if (outcomes.length === 0) return 0;
      const { rowCount } = await db.query(
        `UPDATE webhook_deliveries d
         SET status = CASE WHEN r.ok THEN 'delivered'
                           WHEN d.attempts >= ${MAX_ATTEMPTS} THEN 'failed'
                           ELSE 'pending' END,
             next_attempt_at = CASE WHEN r.ok OR d.attempts >= ${MAX_ATTEMPTS} THEN now()
                                    ELSE now() + r.retry_ms * interval '1 millisecond' END,
             last_response_code = r.code,
             last_response_body = r.body,
             last_error = r.error,
             delivered_at = CASE WHEN r.ok THEN now() END,
             failed_at = CASE WHEN NOT r.ok AND d.attempts >= ${MAX_ATTEMPTS} THEN now() END,
             updated_at = now()
         FROM unnest($1::text[], $2::int[], $3::boolean[], $4::int[], $5::text[], $6::text[],
                     $7::bigint[]) AS r(id, attempt, ok, code, body, error, retry_ms)
         WHERE d.id = r.id AND d.attempts = r.attempt AND d.status = 'pending'`,
        [
          outcomes.map((o) => o.id),
          outcomes.map((o) => o.attempt),
          outcomes.map((o) => o.ok),
          outcomes.map((o) => o.statusCode),
          outcomes.map((o) => o.bodyExcerpt),
          outcomes.map((o) => o.error),
          outcomes.map((o) => Math.max(0, Math.round(o.retryInMs))),
        ],
      );
      return rowCount;
    },

    /**
     * Fails deliveries whose third attempt was claimed but never recorded (the worker died) once
     * its lease has run out: whether the receiver got it is unknown, and there is no fourth try.
     */
    async failAbandoned(): Promise<number> {
      const { rowCount } = await db.query(
        `UPDATE webhook_deliveries
         SET status = 'failed', failed_at = now(), updated_at = now(),
             last_error = 'attempt ${MAX_ATTEMPTS}: the worker stopped before recording its outcome'
         WHERE status = 'pending' AND attempts >= ${MAX_ATTEMPTS} AND next_attempt_at <= now()`,
      );
      return rowCount;
    },
  };
}

export type DeliveryQueue = ReturnType<typeof createDeliveryQueue>;
