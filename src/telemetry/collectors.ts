/**
 * Gauges of shared state, read from the database when Prometheus scrapes: delivery and event
 * queues, the oldest pending delivery, inbound events waiting for their transaction, and the last
 * day the metrics processor finished per product. Registered by processes running the worker role
 * (every worker reports the same figures; alert on max()). One query per scrape, bounded in time:
 * a slow database gives a scrape without these figures, never a hung scrape.
 */
import { Gauge } from 'prom-client';
import type { Queryable } from '../db/client.ts';
import { registry } from './metrics.ts';

interface QueueRow {
  deliveries_pending: string | number;
  events_pending: string | number;
  oldest_pending_age: string | number | null;
  inbound_unlinked: string | number;
}

interface DayRow {
  slug: string;
  last_day: string | Date | null;
}

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
  let snapshot: Promise<{ queue: QueueRow; days: DayRow[] } | undefined> | undefined;
  // The gauges of one scrape share one read.
  const read = () => {
    snapshot ??= withTimeout(
      Promise.all([
        db.query<QueueRow>(
          `SELECT
             (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS deliveries_pending,
             (SELECT count(DISTINCT event_id) FROM webhook_deliveries WHERE status = 'pending') AS events_pending,
             (SELECT extract(epoch FROM now() - min(created_at)) FROM webhook_deliveries
               WHERE status = 'pending') AS oldest_pending_age,
             (SELECT count(*) FROM inbound_events
               WHERE tx_hash IS NOT NULL AND linked_event_id IS NULL) AS inbound_unlinked`,
        ),
        db.query<DayRow>(
          `SELECT p.slug, max(s.date)::text AS last_day
           FROM products p JOIN daily_snapshots s ON s.product_id = p.id AND NOT s.provisional
           GROUP BY p.slug`,
        ),
      ]),
    )
      .then(([q, d]) => ({ queue: q.rows[0]!, days: d.rows }))
      .catch(() => undefined)
      .finally(() => {
        setImmediate(() => {
          snapshot = undefined;
        });
      });
    return snapshot;
  };

  const names: string[] = [];
  const queueGauge = (name: string, help: string, pick: (q: QueueRow) => number) => {
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
    (q) => Number(q.deliveries_pending),
  );
  queueGauge(
    'webhook_events_pending',
    'Events with at least one delivery still pending (the event queue depth).',
    (q) => Number(q.events_pending),
  );
  queueGauge(
    'webhook_oldest_pending_delivery_age_seconds',
    'Age of the oldest pending delivery, in seconds (0 when none is pending).',
    (q) => Number(q.oldest_pending_age ?? 0),
  );
  queueGauge(
    'inbound_events_unlinked',
    'Inbound deposit/redeem reports still waiting for the lifecycle event of their transaction.',
    (q) => Number(q.inbound_unlinked),
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
        if (row.last_day === null) continue;
        const day = typeof row.last_day === 'string' ? row.last_day : row.last_day.toISOString();
        this.set({ product: row.slug }, Date.parse(`${day.slice(0, 10)}T00:00:00Z`) / 1000);
      }
    },
  });
  return () => {
    for (const name of names) registry.removeSingleMetric(name);
  };
}
