/**
 * What the webhook pages read (the destinations with their health, a destination's delivery log,
 * the inbound page, a lifecycle event with its deliveries), kept in this process until the data
 * behind them changes, so that a page load is no database work when nothing changed.
 *
 * It holds only where one process sees every write as it commits: an embedded PGlite database,
 * which one process owns (db/pglite-lock.ts) and whose triggers (migration 0029) tell it of each
 * change before the writing call returns, whoever wrote (a member's edit, replay or rotation; the
 * dispatcher's attempts; an inbound event; the health and retention jobs). A change drops every
 * entry, so no page is ever shown older than the last committed write. With PostgreSQL several
 * processes write and nothing would tell this one in time, so there it does not cache: every load
 * reads, as before (PostgreSQL answers those reads in parallel, well within the pages' budget).
 *
 * Entries also expire after `maxAgeMs`: the health figures are over the 24 hours before they were
 * read, and a page says when that was (docs/portal.md).
 */
import type { Database } from '../db/client.ts';
import { onWebhookChange } from '../db/webhook-changes.ts';

export interface WebhookPagesCache {
  /** The value cached under key, or load()'s, kept until a change or maxAgeMs. */
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function createWebhookPagesCache(
  db: Database,
  options: { maxAgeMs?: number; maxEntries?: number; now?: () => number } = {},
): Promise<WebhookPagesCache> {
  const maxAgeMs = options.maxAgeMs ?? 10_000;
  const maxEntries = options.maxEntries ?? 500;
  const now = options.now ?? Date.now;
  const entries = new Map<string, { until: number; value: Promise<unknown> }>();
  // A load that overlapped a change may have read before it: the change's clear() drops its entry,
  // which was stored when the load began.
  const stop = await onWebhookChange(db, () => entries.clear());
  if (!stop) return { get: (_key, load) => load(), close: async () => {} };
  return {
    get<T>(key: string, load: () => Promise<T>): Promise<T> {
      const t = now();
      const hit = entries.get(key);
      if (hit && hit.until > t) return hit.value as Promise<T>;
      if (entries.size >= maxEntries) entries.clear();
      const value = load();
      entries.set(key, { until: t + maxAgeMs, value });
      value.catch(() => {
        if (entries.get(key)?.value === value) entries.delete(key);
      });
      return value;
    },
    close: async () => {
      entries.clear();
      // Closing the database first ended the listening already.
      await stop().catch(() => {});
    },
  };
}
