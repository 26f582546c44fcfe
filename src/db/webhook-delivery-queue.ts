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
import type { Queryable } from './client.ts';

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
  /** The secret before the last rotation, while its grace period lasts (it signs too). */
  previousSecretCiphertext: string | null;
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
  /** How long the attempt took (the attempt log's latency). */
  durationMs?: number;
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
  previous_secret_ciphertext: string | null;
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
                   w.secret_ciphertext,
                   CASE WHEN w.previous_secret_expires_at > now()
                        THEN w.previous_secret_ciphertext END AS previous_secret_ciphertext,
                   e.created_at AS event_created_at`,
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
        previousSecretCiphertext: r.previous_secret_ciphertext,
        eventCreatedAt: r.event_created_at,
      }));
    },

    /**
     * Records the outcomes of claimed attempts, in one statement: the delivery rows, the attempt
     * log, and the destinations' health (`failing_since` set at a destination's first failure
     * after a success, cleared by a success; written only on those transitions, so a healthy
     * destination's row is not touched). Returns how many outcomes applied.
     */
    async record(outcomes: readonly AttemptOutcome[]): Promise<number> {
      if (outcomes.length === 0) return 0;
      const { rows } = await db.query<{ applied: number }>(
        `WITH r AS (
           SELECT * FROM unnest($1::text[], $2::int[], $3::boolean[], $4::int[], $5::text[],
                                $6::text[], $7::bigint[], $8::int[])
             AS r(id, attempt, ok, code, body, error, retry_ms, duration_ms)
         ),
         updated AS (
           UPDATE webhook_deliveries d
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
           FROM r
           WHERE d.id = r.id AND d.attempts = r.attempt AND d.status = 'pending'
           RETURNING d.id, d.destination_id, d.last_attempt_at, r.attempt, r.ok, r.code, r.body,
                     r.error, r.duration_ms
         ),
         logged AS (
           INSERT INTO webhook_delivery_attempts
             (delivery_id, attempt, destination_id, attempted_at, ok, status_code, duration_ms,
              response_body, error)
           SELECT id, attempt, destination_id, coalesce(last_attempt_at, now()), ok, code,
                  duration_ms, body, error
           FROM updated
           ON CONFLICT DO NOTHING
         ),
         health AS (
           SELECT destination_id, bool_or(ok) AS any_ok FROM updated GROUP BY destination_id
         ),
         recovered AS (
           -- A disabled destination keeps its failing_since (the re-enable replays from it).
           UPDATE webhook_destinations w SET failing_since = NULL
           FROM health h
           WHERE w.id = h.destination_id AND h.any_ok AND w.failing_since IS NOT NULL
             AND w.disabled_at IS NULL
         ),
         failing AS (
           UPDATE webhook_destinations w SET failing_since = now()
           FROM health h
           WHERE w.id = h.destination_id AND NOT h.any_ok AND w.failing_since IS NULL
         )
         SELECT count(*)::int AS applied FROM updated`,
        [
          outcomes.map((o) => o.id),
          outcomes.map((o) => o.attempt),
          outcomes.map((o) => o.ok),
          outcomes.map((o) => o.statusCode),
          outcomes.map((o) => o.bodyExcerpt),
          outcomes.map((o) => o.error),
          outcomes.map((o) => Math.max(0, Math.round(o.retryInMs))),
          outcomes.map((o) => Math.max(0, Math.round(o.durationMs ?? 0))),
        ],
      );
      return rows[0]?.applied ?? 0;
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
