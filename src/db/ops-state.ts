/**
 * Reads of shared state for the operational gauges (src/telemetry/collectors.ts): the webhook
 * queues, inbound events waiting for their transaction, and the last day the metrics processor
 * finished per product. Counts only; nothing here is partner data.
 */
import type { Queryable } from './client.ts';

export interface QueueState {
  /** Outbound deliveries waiting for an attempt or in flight. */
  deliveriesPending: number;
  /** Events with at least one delivery still pending. */
  eventsPending: number;
  /** Age of the oldest pending delivery in seconds (0 when none is pending). */
  oldestPendingAgeSeconds: number;
  /** Inbound deposit/redeem reports still waiting for the lifecycle event of their transaction. */
  inboundUnlinked: number;
}

export interface LastFinishedDay {
  slug: string;
  /** 'YYYY-MM-DD' of the product's newest final snapshot, or null. */
  day: string | null;
}

export async function readQueueState(db: Queryable): Promise<QueueState> {
  const { rows } = await db.query<{
    deliveries_pending: string | number;
    events_pending: string | number;
    oldest_pending_age: string | number | null;
    inbound_unlinked: string | number;
  }>(
    `SELECT
       (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS deliveries_pending,
       (SELECT count(DISTINCT event_id) FROM webhook_deliveries WHERE status = 'pending') AS events_pending,
       (SELECT extract(epoch FROM now() - min(created_at)) FROM webhook_deliveries
         WHERE status = 'pending') AS oldest_pending_age,
       (SELECT count(*) FROM inbound_events
         WHERE tx_hash IS NOT NULL AND linked_event_id IS NULL) AS inbound_unlinked`,
  );
  const q = rows[0]!;
  return {
    deliveriesPending: Number(q.deliveries_pending),
    eventsPending: Number(q.events_pending),
    oldestPendingAgeSeconds: Number(q.oldest_pending_age ?? 0),
    inboundUnlinked: Number(q.inbound_unlinked),
  };
}

export async function readLastFinishedDays(db: Queryable): Promise<LastFinishedDay[]> {
  const { rows } = await db.query<{ slug: string; last_day: string | Date | null }>(
    `SELECT p.slug, max(s.date)::text AS last_day
     FROM products p JOIN daily_snapshots s ON s.product_id = p.id AND NOT s.provisional
     GROUP BY p.slug`,
  );
  return rows.map((r) => ({
    slug: r.slug,
    day:
      r.last_day === null
        ? null
        : (typeof r.last_day === 'string' ? r.last_day : r.last_day.toISOString()).slice(0, 10),
  }));
}
