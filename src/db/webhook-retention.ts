/**
 * Retention of webhook data: outbound delivery attempts (the attempt log) and finished deliveries
 * with their response excerpts, kept 90 days by default; inbound events, which hold the partners'
 * Idempotency-Keys, kept at least 30 days (DECISIONS). Each call deletes at most one batch, in its
 * own short statement, so the dispatcher — claiming and recording on the same tables — never waits
 * behind a long delete; the job calls it again until a batch comes back short.
 *
 * A pending delivery is never deleted, however old its event. Deleting a delivery deletes its
 * attempts (ON DELETE CASCADE) and turns the `replay_of` of a later replay into null.
 */
import type { Queryable } from './client.ts';

export const DEFAULT_ATTEMPT_RETENTION_MS = 90 * 24 * 60 * 60 * 1000;
export const DEFAULT_INBOUND_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
export const MIN_INBOUND_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
export const DEFAULT_PRUNE_BATCH = 1_000;

export function createWebhookRetention(db: Queryable) {
  return {
    /** Deletes up to `batch` attempt-log rows made before `before`; returns how many. */
    async pruneAttempts(before: Date, batch = DEFAULT_PRUNE_BATCH): Promise<number> {
      const { rowCount } = await db.query(
        `DELETE FROM webhook_delivery_attempts
         WHERE (delivery_id, attempt) IN (
           SELECT delivery_id, attempt FROM webhook_delivery_attempts
           WHERE attempted_at < $1 ORDER BY attempted_at LIMIT $2
           FOR UPDATE SKIP LOCKED)`,
        [before, batch],
      );
      return rowCount;
    },

    /** Deletes up to `batch` finished deliveries last updated before `before`; returns how many. */
    async pruneDeliveries(before: Date, batch = DEFAULT_PRUNE_BATCH): Promise<number> {
      const { rowCount } = await db.query(
        `DELETE FROM webhook_deliveries
         WHERE id IN (
           SELECT id FROM webhook_deliveries
           WHERE status <> 'pending' AND updated_at < $1 ORDER BY updated_at LIMIT $2
           FOR UPDATE SKIP LOCKED)`,
        [before, batch],
      );
      return rowCount;
    },

    /**
     * Deletes up to `batch` inbound events received before `before` (never less than 30 days
     * ago: an earlier moment is refused); returns how many.
     */
    async pruneInbound(
      before: Date,
      batch = DEFAULT_PRUNE_BATCH,
      now: Date = new Date(),
    ): Promise<number> {
      if (before.getTime() > now.getTime() - MIN_INBOUND_RETENTION_MS) {
        throw new RangeError('inbound idempotency keys are kept at least 30 days');
      }
      const { rowCount } = await db.query(
        `DELETE FROM inbound_events
         WHERE id IN (
           SELECT id FROM inbound_events WHERE received_at < $1 ORDER BY received_at LIMIT $2
           FOR UPDATE SKIP LOCKED)`,
        [before, batch],
      );
      return rowCount;
    },
  };
}

export type WebhookRetention = ReturnType<typeof createWebhookRetention>;
