/**
 * The outbound delivery queue, on the webhook_deliveries table (an outbox: the rows are committed
 * with their event, by the fan-out trigger, before anything is sent). Portable across PGlite and
 * PostgreSQL; several workers share it through `FOR UPDATE SKIP LOCKED`.
 *
 * The attempt protocol, which is what makes crashes safe:
 * 1. claim: one statement picks due rows, leases them (next_attempt_at = now + lease) and bumps
 *    `claims`, the lease's fencing token, and commits. The attempt is not counted yet.
 * 2. markSent: once the request's connection is open and before any byte of it is written (the
 *    sender's `beforeBody` gate), the attempt is counted (attempts + 1) under the token. Only the
 *    current claim can count it, so no attempt number is sent twice and attempts never pass three.
 * 3. send.
 * 4. record: only under that token (a worker whose lease ran out and was taken over cannot
 *    overwrite the newer attempt): delivered, failed after the third attempt, or pending with the
 *    next attempt's due time. An attempt that failed before sending (a refused connection, a
 *    timeout while connecting) is counted here: the receiver could not have got it, but it was tried.
 * A worker that dies after 1 but before 2 sent nothing: when the lease ends the same attempt is
 * claimed again. One that dies after 2 leaves an attempt whose outcome is unknown: the next attempt
 * is claimed when the lease ends, and after the third the row is failed with "outcome unknown".
 */
import type { Queryable } from './client.ts';

export const MAX_ATTEMPTS = 3;

export interface ClaimedDelivery {
  id: string;
  /** 1, 2 or 3: the attempt this claim is. */
  attempt: number;
  /** The claim's fencing token: markSent and record apply only while the row still carries it. */
  claim: number;
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
  /** The event's numbers (migration 0042): per product, and per partner environment. */
  productSeq: bigint | null;
  partnerSeq: bigint | null;
}

export interface AttemptOutcome {
  id: string;
  attempt: number;
  /** The claim's fencing token (ClaimedDelivery.claim). */
  claim: number;
  ok: boolean;
  statusCode: number | null;
  bodyExcerpt: string | null;
  error: string | null;
  /** For a failed attempt that is not the last: how long until the next one. */
  retryInMs: number;
  /** How long the attempt took (the attempt log's latency). */
  durationMs?: number;
}

/** A claimed attempt about to be sent (markSent). */
export interface SendingAttempt {
  id: string;
  attempt: number;
  claim: number;
}

interface ClaimRow {
  id: string;
  attempts: number;
  claims: number;
  event_id: string;
  event_type: string;
  payload: string;
  destination_id: string;
  url: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  event_created_at: Date;
  product_seq: string | null;
  partner_seq: string | null;
}

export function createDeliveryQueue(db: Queryable) {
  return {
    /**
     * Claims up to `limit` due deliveries for one attempt each, leased for `leaseMs`. The attempt
     * is counted by markSent (or record), not here.
     */
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
         SET claims = d.claims + 1,
             next_attempt_at = now() + $2 * interval '1 millisecond',
             updated_at = now()
         FROM due, events e, webhook_destinations w
         WHERE d.id = due.id AND e.id = d.event_id AND w.id = d.destination_id
         RETURNING d.id, d.attempts + 1 AS attempts, d.claims, d.event_id, e.event_type, e.payload, d.destination_id, w.url,
                   w.secret_ciphertext,
                   CASE WHEN w.previous_secret_expires_at > now()
                        THEN w.previous_secret_ciphertext END AS previous_secret_ciphertext,
                   e.created_at AS event_created_at, e.product_seq, e.partner_seq`,
        [limit, leaseMs],
      );
      return rows.map((r) => ({
        id: r.id,
        attempt: r.attempts,
        claim: r.claims,
        eventId: r.event_id,
        eventType: r.event_type,
        payload: r.payload,
        destinationId: r.destination_id,
        url: r.url,
        secretCiphertext: r.secret_ciphertext,
        previousSecretCiphertext: r.previous_secret_ciphertext,
        eventCreatedAt: r.event_created_at,
        productSeq: r.product_seq === null ? null : BigInt(r.product_seq),
        partnerSeq: r.partner_seq === null ? null : BigInt(r.partner_seq),
      }));
    },

    /**
     * Counts claimed attempts as sent, each only while its row still carries its claim and its
     * lease has not run out (else another worker may have it: that request is not sent). Returns
     * the ids counted. Called just before the requests' bytes go out; one statement for a batch.
     */
    async markSent(attempts: readonly SendingAttempt[]): Promise<Set<string>> {
      if (attempts.length === 0) return new Set();
      const { rows } = await db.query<{ id: string }>(
        `UPDATE webhook_deliveries d
         SET attempts = r.attempt, last_attempt_at = now(), updated_at = now()
         FROM unnest($1::text[], $2::int[], $3::int[]) AS r(id, attempt, claim)
         WHERE d.id = r.id AND d.claims = r.claim AND d.attempts = r.attempt - 1
           AND d.status = 'pending' AND d.next_attempt_at > now()
         RETURNING d.id`,
        [attempts.map((a) => a.id), attempts.map((a) => a.attempt), attempts.map((a) => a.claim)],
      );
      return new Set(rows.map((r) => r.id));
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
                                $6::text[], $7::bigint[], $8::int[], $9::int[])
             AS r(id, attempt, ok, code, body, error, retry_ms, duration_ms, claim)
         ),
         updated AS (
           UPDATE webhook_deliveries d
           SET status = CASE WHEN r.ok THEN 'delivered'
                             WHEN r.attempt >= ${MAX_ATTEMPTS} THEN 'failed'
                             ELSE 'pending' END,
               next_attempt_at = CASE WHEN r.ok OR r.attempt >= ${MAX_ATTEMPTS} THEN now()
                                      ELSE now() + r.retry_ms * interval '1 millisecond' END,
               -- Counted already when it was sent; else it failed before sending, and counts now.
               attempts = r.attempt,
               last_attempt_at = CASE WHEN d.attempts = r.attempt THEN d.last_attempt_at
                                      ELSE now() - r.duration_ms * interval '1 millisecond' END,
               last_response_code = r.code,
               last_response_body = r.body,
               last_error = r.error,
               delivered_at = CASE WHEN r.ok THEN now() END,
               failed_at = CASE WHEN NOT r.ok AND r.attempt >= ${MAX_ATTEMPTS} THEN now() END,
               updated_at = now()
           FROM r
           WHERE d.id = r.id AND d.claims = r.claim AND d.status = 'pending'
             AND d.attempts IN (r.attempt - 1, r.attempt)
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
          outcomes.map((o) => o.claim),
        ],
      );
      return rows[0]?.applied ?? 0;
    },

    /**
     * Fails deliveries whose third attempt was sent but never recorded (the worker died) once its
     * lease has run out: whether the receiver got it is unknown, and there is no fourth try. A third
     * attempt claimed but never sent is not here: its row still says two attempts, and is claimed
     * again.
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
