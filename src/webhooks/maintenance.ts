/**
 * The webhook maintenance job (worker role), a periodic job beside the dispatcher, never inside it:
 * disables destinations that have only failed for too long (src/db/webhook-health.ts), then prunes
 * what retention no longer keeps (src/db/webhook-retention.ts) one small batch per statement,
 * pausing between batches so the dispatcher's claims and records interleave with them.
 */
import type { Database } from '../db/client.ts';
import { createWebhookHealthRepo, DEFAULT_DISABLE_AFTER_MS } from '../db/webhook-health.ts';
import {
  createWebhookRetention,
  DEFAULT_ATTEMPT_RETENTION_MS,
  DEFAULT_INBOUND_RETENTION_MS,
  DEFAULT_PRUNE_BATCH,
} from '../db/webhook-retention.ts';
import type { Logger } from '../logger.ts';
import { createPeriodicJob, type Job } from '../worker/runner.ts';

export interface MaintenanceSettings {
  disableAfterMs: number;
  attemptRetentionMs: number;
  inboundRetentionMs: number;
  batch: number;
  /** Pause between two batches. */
  pauseMs: number;
}

export const DEFAULT_MAINTENANCE: MaintenanceSettings = {
  disableAfterMs: DEFAULT_DISABLE_AFTER_MS,
  attemptRetentionMs: DEFAULT_ATTEMPT_RETENTION_MS,
  inboundRetentionMs: DEFAULT_INBOUND_RETENTION_MS,
  batch: DEFAULT_PRUNE_BATCH,
  pauseMs: 20,
};

const DAY_MS = 86_400_000;

/** The settings of a configuration (README's table). */
export function maintenanceSettings(config: {
  WEBHOOK_DISABLE_AFTER_DAYS: number;
  WEBHOOK_ATTEMPT_RETENTION_DAYS: number;
  INBOUND_IDEMPOTENCY_RETENTION_DAYS: number;
}): Partial<MaintenanceSettings> {
  return {
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_DAYS * DAY_MS,
    attemptRetentionMs: config.WEBHOOK_ATTEMPT_RETENTION_DAYS * DAY_MS,
    inboundRetentionMs: config.INBOUND_IDEMPOTENCY_RETENTION_DAYS * DAY_MS,
  };
}

export interface MaintenanceRun {
  disabled: string[];
  attempts: number;
  deliveries: number;
  inbound: number;
}

export function createWebhookMaintenance(options: {
  db: Database;
  logger: Logger;
  settings?: Partial<MaintenanceSettings>;
  /** The clock (tests move it forward). */
  now?: () => Date;
}) {
  const { db, logger } = options;
  const s = { ...DEFAULT_MAINTENANCE, ...options.settings };
  const now = options.now ?? (() => new Date());
  const health = createWebhookHealthRepo(db);
  const retention = createWebhookRetention(db);
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** Calls `prune` until a batch comes back short (or the signal aborts); returns the total. */
  const drain = async (prune: () => Promise<number>, signal?: AbortSignal) => {
    let total = 0;
    for (;;) {
      const n = await prune();
      total += n;
      if (n < s.batch || signal?.aborted) return total;
      await pause(s.pauseMs);
    }
  };

  const runOnce = async (signal?: AbortSignal): Promise<MaintenanceRun> => {
    const at = now();
    const disabled = await health.disableFailing({ afterMs: s.disableAfterMs, now: at });
    for (const d of disabled) {
      logger.warn({ destination: d.id, reason: d.reason }, 'webhook destination disabled');
    }
    const attemptsBefore = new Date(at.getTime() - s.attemptRetentionMs);
    const inboundBefore = new Date(at.getTime() - s.inboundRetentionMs);
    const run: MaintenanceRun = {
      disabled: disabled.map((d) => d.id),
      attempts: await drain(() => retention.pruneAttempts(attemptsBefore, s.batch), signal),
      deliveries: await drain(() => retention.pruneDeliveries(attemptsBefore, s.batch), signal),
      inbound: await drain(() => retention.pruneInbound(inboundBefore, s.batch, at), signal),
    };
    if (run.attempts + run.deliveries + run.inbound > 0) {
      logger.info(run, 'webhook retention pruned');
    }
    return run;
  };

  return {
    runOnce,
    job(intervalMs = 60_000): Job {
      return createPeriodicJob({
        name: 'webhook-maintenance',
        intervalMs,
        logger,
        tick: async (signal) => {
          await runOnce(signal);
        },
      });
    },
  };
}
