/**
 * Gauges of shared state, read from the database when Prometheus scrapes: delivery and event
 * queues, the oldest pending delivery, inbound events waiting for their transaction, and the last
 * day the metrics processor finished per product. Registered by processes running the worker role
 * (every worker reports the same figures; alert on max()). One query per scrape, bounded in time:
 * a slow database gives a scrape without these figures, never a hung scrape.
 */
import { Gauge } from 'prom-client';
import type { Queryable } from '../db/client.ts';
import {
  type LastFinishedDay,
  type QueueState,
  readLastFinishedDays,
  readQueueState,
} from '../db/ops-state.ts';
import { registry } from './metrics.ts';

const SCRAPE_QUERY_TIMEOUT_MS = 2000;

function withTimeout<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error('scrape query timed out')),
        SCRAPE_QUERY_TIMEOUT_MS,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

export function registerStateCollectors(db: Queryable): () => void {
  let snapshot: Promise<{ queue: QueueState; days: LastFinishedDay[] } | undefined> | undefined;
  // The gauges of one scrape share one read.
  const read = () => {
    snapshot ??= withTimeout(Promise.all([readQueueState(db), readLastFinishedDays(db)]))
      .then(([queue, days]) => ({ queue, days }))
      .catch(() => undefined)
      .finally(() => {
        setImmediate(() => {
          snapshot = undefined;
        });
      });
    return snapshot;
  };

  const names: string[] = [];
  const queueGauge = (name: string, help: string, pick: (q: QueueState) => number) => {
    names.push(name);
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const s = await read();
        if (s) this.set(pick(s.queue));
      },
    });
  };
  queueGauge(
    'webhook_deliveries_pending',
    'Outbound webhook deliveries waiting for an attempt or in flight (the delivery queue depth).',
    (q) => q.deliveriesPending,
  );
  queueGauge(
    'webhook_events_pending',
    'Events with at least one delivery still pending (the event queue depth).',
    (q) => q.eventsPending,
  );
  queueGauge(
    'webhook_oldest_pending_delivery_age_seconds',
    'Age of the oldest pending delivery, in seconds (0 when none is pending).',
    (q) => q.oldestPendingAgeSeconds,
  );
  queueGauge(
    'inbound_events_unlinked',
    'Inbound deposit/redeem reports still waiting for the lifecycle event of their transaction.',
    (q) => q.inboundUnlinked,
  );
  names.push('metrics_last_finished_day_timestamp_seconds');
  new Gauge({
    name: 'metrics_last_finished_day_timestamp_seconds',
    help: 'Start (00:00 UTC) of the last day the metrics processor finished, per product slug, as a Unix time.',
    labelNames: ['product'] as const,
    registers: [registry],
    async collect() {
      const s = await read();
      if (!s) return;
      this.reset();
      for (const row of s.days) {
        if (row.day === null) continue;
        this.set({ product: row.slug }, Date.parse(`${row.day}T00:00:00Z`) / 1000);
      }
    },
  });
  return () => {
    for (const name of names) registry.removeSingleMetric(name);
  };
}
