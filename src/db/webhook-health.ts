/**
 * Endpoint health of outbound destinations: statistics from the attempt log, the automatic
 * disabling of a destination whose every attempt has failed for days, and re-enabling it. The
 * portal calls these functions; the CLI (`webhook stats`, `webhook enable`) does today.
 *
 * A destination's `failing_since` is kept by the dispatcher as it records outcomes (see
 * webhook-delivery-queue.ts): the first failed attempt after the last success. Once it is older than the
 * threshold (5 days by default) the health job disables the destination: its pending deliveries
 * are failed (kept, for the replay), events stored while it is disabled get a failed delivery at
 * once (the fan-out trigger), and a reason the partner can read is recorded. Re-enabling clears
 * the state and replays every event whose delivery failed since `failing_since`.
 *
 * A destination can also be disabled by hand (the portal, `webhook disable`): the same state with
 * `disabled_by = 'manual'` and a reason naming who did it, and the same consequences, so one rule
 * holds for every disabled destination: nothing pending is sent to it (its pending deliveries,
 * retries included, are failed with "destination disabled" and kept), events stored meanwhile get
 * a failed delivery, and re-enabling replays everything that failed since it started failing, or
 * since it was disabled when it was not failing. Only a test event (ping) is still sent to a
 * disabled destination, on request, to check it before re-enabling it.
 */
import { BaseError } from '../errors.ts';
import type { Database, Queryable } from './client.ts';
import { createWebhookDeliveriesRepo, type WebhookDelivery } from './webhook-deliveries.ts';
import {
  type DestinationRow,
  type DisabledBy,
  toDestination,
  type WebhookDestination,
} from './webhook-destinations.ts';

export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000;
/** The statistics window. */
export const STATS_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface DestinationHealth {
  destinationId: string;
  /** Null while the destination is enabled. */
  disabledAt: Date | null;
  /** 'health': by the health job; 'manual': by a person (portal or CLI). */
  disabledBy: DisabledBy | null;
  /** Why it was disabled, in words a partner can act on. */
  disabledReason: string | null;
  /** First failed attempt since the last success; null when the last outcome was a success. */
  failingSince: Date | null;
  /** Over the last 24 h. */
  window: {
    attempts: number;
    succeeded: number;
    /** succeeded / attempts, 0 to 1; null without attempts. */
    successRate: number | null;
    /** Attempt durations, in ms; null without attempts. */
    latencyMs: { p50: number; p95: number; max: number } | null;
  };
  lastSuccessAt: Date | null;
  lastFailure: { at: Date; statusCode: number | null; error: string | null } | null;
}

interface StatsRow {
  id: string;
  disabled_at: Date | null;
  disabled_by: DisabledBy | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  attempts: number;
  succeeded: number;
  p50: number | null;
  p95: number | null;
  max_ms: number | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_failure_code: number | null;
  last_failure_error: string | null;
}

const STATS_COLUMNS = 'w.id, w.disabled_at, w.disabled_by, w.disabled_reason, w.failing_since';

const toHealth = (r: StatsRow): DestinationHealth => ({
  destinationId: r.id,
  disabledAt: r.disabled_at,
  disabledBy: r.disabled_by,
  disabledReason: r.disabled_reason,
  failingSince: r.failing_since,
  window: {
    attempts: r.attempts,
    succeeded: r.succeeded,
    successRate: r.attempts === 0 ? null : r.succeeded / r.attempts,
    latencyMs:
      r.attempts === 0 || r.p50 === null || r.p95 === null || r.max_ms === null
        ? null
        : { p50: Math.round(r.p50), p95: Math.round(r.p95), max: r.max_ms },
  },
  lastSuccessAt: r.last_success_at,
  lastFailure:
    r.last_failure_at === null
      ? null
      : { at: r.last_failure_at, statusCode: r.last_failure_code, error: r.last_failure_error },
});

/** What the partner reads about a disabled destination. */
export function disabledReason(
  failingSince: Date,
  afterMs: number,
  last: { statusCode: number | null; error: string | null } | undefined,
): string {
  const lastText = last
    ? last.statusCode !== null
      ? `the last answer was HTTP ${last.statusCode}`
      : `the last attempt got no answer: ${last.error ?? 'unknown error'}`
    : 'no attempt detail kept';
  const days = afterMs / 86_400_000;
  const span = Number.isInteger(days) ? `${days} days` : `${Math.round(afterMs / 3_600_000)} hours`;
  return (
    `Disabled automatically: every delivery attempt since ${failingSince.toISOString()} failed ` +
    `(${span} without a success; ${lastText}). Fix the endpoint, then re-enable the destination: ` +
    'what failed meanwhile is replayed.'
  );
}

/** What the partner reads about a destination disabled by hand. */
export function manualDisabledReason(by: string, at: Date, note?: string): string {
  const why = note?.trim() ? ` (“${note.trim()}”)` : '';
  return (
    `Disabled by ${by} on ${at.toISOString()}${why}. Nothing is sent to it until it is ` +
    're-enabled; what failed meanwhile is then replayed.'
  );
}

/** Longest note a person may give when disabling a destination. */
export const MAX_DISABLE_NOTE_LENGTH = 200;

type WebhookHealthErrorCode =
  | 'destination_not_found'
  | 'destination_removed'
  | 'not_disabled'
  | 'already_disabled'
  | 'invalid_note';

export class WebhookHealthError extends BaseError<WebhookHealthErrorCode> {
  override name = 'WebhookHealthError';
  constructor(message: string, code: WebhookHealthErrorCode) {
    super(code, message);
  }
}

export function createWebhookHealthRepo(db: Queryable | Database) {
  const inTransaction = <T>(fn: (q: Queryable) => Promise<T>): Promise<T> =>
    'transaction' in db ? db.transaction(fn) : fn(db);

  /** The statistics query, with the destination columns a caller needs (`w` is the destination). */
  const readStats = async <R>(
    columns: string,
    destinationIds: readonly string[] | undefined,
    now: Date,
  ): Promise<R[]> => {
    const { rows } = await db.query<R>(
      `SELECT ${columns},
              s.attempts, s.succeeded, s.p50, s.p95, s.max_ms,
              ls.attempted_at AS last_success_at,
              lf.attempted_at AS last_failure_at, lf.status_code AS last_failure_code,
              lf.error AS last_failure_error
       FROM webhook_destinations w
       CROSS JOIN LATERAL (
         SELECT count(*)::int AS attempts, (count(*) FILTER (WHERE a.ok))::int AS succeeded,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duration_ms) AS p50,
                percentile_cont(0.95) WITHIN GROUP (ORDER BY a.duration_ms) AS p95,
                max(a.duration_ms) AS max_ms
         FROM webhook_delivery_attempts a
         WHERE a.destination_id = w.id AND a.attempted_at > $2::timestamptz - $3 * interval '1 millisecond'
           AND a.attempted_at <= $2::timestamptz
       ) s
       LEFT JOIN LATERAL (
         SELECT a.attempted_at FROM webhook_delivery_attempts a
         WHERE a.destination_id = w.id AND a.ok AND a.attempted_at <= $2::timestamptz
         ORDER BY a.attempted_at DESC LIMIT 1
       ) ls ON true
       LEFT JOIN LATERAL (
         SELECT a.attempted_at, a.status_code, a.error FROM webhook_delivery_attempts a
         WHERE a.destination_id = w.id AND NOT a.ok AND a.attempted_at <= $2::timestamptz
         ORDER BY a.attempted_at DESC LIMIT 1
       ) lf ON true
       WHERE ($1::text[] IS NULL OR w.id = ANY ($1))
       ORDER BY w.created_at, w.id`,
      [destinationIds ? [...destinationIds] : null, now, STATS_WINDOW_MS],
    );
    return rows;
  };

  return {
    /**
     * Statistics of destinations (all of them without ids): success rate and attempt latency
     * over the 24 h before `now`, last success, last failure, and the disabled state.
     */
    async stats(
      destinationIds?: readonly string[],
      now: Date = new Date(),
    ): Promise<DestinationHealth[]> {
      return (await readStats<StatsRow>(STATS_COLUMNS, destinationIds, now)).map(toHealth);
    },

    /**
     * One destination with its statistics, in one statement (the portal's destination page):
     * undefined when there is no destination with that id.
     */
    async destinationWithStats(
      id: string,
      now: Date = new Date(),
    ): Promise<{ destination: WebhookDestination; health: DestinationHealth } | undefined> {
      const [row] = await readStats<StatsRow & DestinationRow>('w.*', [id], now);
      return row && { destination: toDestination(row), health: toHealth(row) };
    },

    /**
     * Disables every enabled destination whose attempts have all failed since more than
     * `afterMs` before `now`: records the reason, fails its pending deliveries (kept for the
     * replay). One transaction per destination, skipping a row another worker holds. Returns the
     * ids disabled.
     */
    async disableFailing(
      options: { afterMs?: number; now?: Date } = {},
    ): Promise<Array<{ id: string; reason: string }>> {
      const afterMs = options.afterMs ?? DEFAULT_DISABLE_AFTER_MS;
      const now = options.now ?? new Date();
      const { rows: candidates } = await db.query<{ id: string }>(
        `SELECT id FROM webhook_destinations
         WHERE removed_at IS NULL AND disabled_at IS NULL
           AND failing_since <= $1::timestamptz - $2 * interval '1 millisecond'`,
        [now, afterMs],
      );
      const disabled: Array<{ id: string; reason: string }> = [];
      for (const { id } of candidates) {
        const done = await inTransaction(async (tx) => {
          // Re-checked under the row lock: a success recorded meanwhile clears failing_since.
          const { rows } = await tx.query<{ failing_since: Date }>(
            `SELECT failing_since FROM webhook_destinations
             WHERE id = $1 AND removed_at IS NULL AND disabled_at IS NULL
               AND failing_since <= $2::timestamptz - $3 * interval '1 millisecond'
             FOR UPDATE SKIP LOCKED`,
            [id, now, afterMs],
          );
          const failingSince = rows[0]?.failing_since;
          if (!failingSince) return undefined;
          const { rows: last } = await tx.query<{
            status_code: number | null;
            error: string | null;
          }>(
            `SELECT status_code, error FROM webhook_delivery_attempts
             WHERE destination_id = $1 ORDER BY attempted_at DESC LIMIT 1`,
            [id],
          );
          const reason = disabledReason(
            failingSince,
            afterMs,
            last[0] && { statusCode: last[0].status_code, error: last[0].error },
          );
          await tx.query(
            `UPDATE webhook_destinations
             SET disabled_at = $2, disabled_by = 'health', disabled_reason = $3 WHERE id = $1`,
            [id, now, reason],
          );
          await tx.query(
            `UPDATE webhook_deliveries
             SET status = 'failed', failed_at = now(), updated_at = now(),
                 last_error = 'destination disabled' || coalesce('; last attempt: ' || last_error, '')
             WHERE destination_id = $1 AND status = 'pending'`,
            [id],
          );
          return reason;
        });
        if (done !== undefined) disabled.push({ id, reason: done });
      }
      return disabled;
    },

    /**
     * Disables a destination by hand: `by` names who (an e-mail, or "the operator"), `note` is
     * an optional word of why, both kept in the reason the partner reads. Its pending deliveries
     * are failed (kept, replayed on re-enabling) in the same transaction, so none is claimed
     * after it; an attempt already in flight finishes, and its outcome is not recorded (the
     * delivery is failed already). Refused for a destination already disabled, by hand or by the
     * health job (whose reason is kept).
     */
    async disable(
      id: string,
      options: { by: string; note?: string },
    ): Promise<{ disabledAt: Date; reason: string; failedPending: number }> {
      const note = options.note?.trim() ?? '';
      if (note.length > MAX_DISABLE_NOTE_LENGTH) {
        throw new WebhookHealthError(
          `the note is ${note.length} characters; at most ${MAX_DISABLE_NOTE_LENGTH}`,
          'invalid_note',
        );
      }
      return inTransaction(async (tx) => {
        const { rows } = await tx.query<{
          removed_at: Date | null;
          disabled_at: Date | null;
          now: Date;
        }>(
          `SELECT removed_at, disabled_at, now() AS now FROM webhook_destinations
           WHERE id = $1 FOR UPDATE`,
          [id],
        );
        const d = rows[0];
        if (!d) {
          throw new WebhookHealthError(
            `no webhook destination with id ${id}`,
            'destination_not_found',
          );
        }
        if (d.removed_at) {
          throw new WebhookHealthError(`destination ${id} was removed`, 'destination_removed');
        }
        if (d.disabled_at) {
          throw new WebhookHealthError(`destination ${id} is already disabled`, 'already_disabled');
        }
        const reason = manualDisabledReason(options.by, d.now, note);
        await tx.query(
          `UPDATE webhook_destinations
           SET disabled_at = now(), disabled_by = 'manual', disabled_reason = $2 WHERE id = $1`,
          [id, reason],
        );
        // failed_at = now() = disabled_at (one transaction): enable() replays from disabled_at.
        const failed = await tx.query(
          `UPDATE webhook_deliveries
           SET status = 'failed', failed_at = now(), updated_at = now(),
               last_error = 'destination disabled' || coalesce('; last attempt: ' || last_error, '')
           WHERE destination_id = $1 AND status = 'pending'`,
          [id],
        );
        return { disabledAt: d.now, reason, failedPending: failed.rowCount };
      });
    },

    /**
     * Re-enables a disabled destination and, unless `replay` is false, replays every event that
     * failed there since it started failing (once per event, as `replayFailed` does).
     */
    async enable(
      id: string,
      options: { replay?: boolean } = {},
    ): Promise<{ failingSince: Date | null; replayed: WebhookDelivery[] }> {
      const { rows } = await db.query<{
        removed_at: Date | null;
        disabled_at: Date | null;
        failing_since: Date | null;
      }>('SELECT removed_at, disabled_at, failing_since FROM webhook_destinations WHERE id = $1', [
        id,
      ]);
      const d = rows[0];
      if (!d) {
        throw new WebhookHealthError(
          `no webhook destination with id ${id}`,
          'destination_not_found',
        );
      }
      if (d.removed_at) {
        throw new WebhookHealthError(`destination ${id} was removed`, 'destination_removed');
      }
      if (!d.disabled_at) {
        throw new WebhookHealthError(`destination ${id} is not disabled`, 'not_disabled');
      }
      const since = d.failing_since ?? d.disabled_at;
      await db.query(
        `UPDATE webhook_destinations
         SET disabled_at = NULL, disabled_by = NULL, disabled_reason = NULL, failing_since = NULL
         WHERE id = $1`,
        [id],
      );
      if (options.replay === false) return { failingSince: d.failing_since, replayed: [] };
      // Deliveries made before the failures began but failed after: replayed too.
      const { rows: first } = await db.query<{ created_at: Date | null }>(
        `SELECT min(created_at) AS created_at FROM webhook_deliveries
         WHERE destination_id = $1 AND status = 'failed' AND failed_at >= $2`,
        [id, since],
      );
      const from = first[0]?.created_at;
      if (!from) return { failingSince: d.failing_since, replayed: [] };
      const replayed = await createWebhookDeliveriesRepo(db).replayFailed(id, from);
      return { failingSince: d.failing_since, replayed: replayed.deliveries };
    },
  };
}

export type WebhookHealthRepo = ReturnType<typeof createWebhookHealthRepo>;
