/**
 * What a group of portal pages reads, kept in this process until the data behind it changes, so
 * that a page load is no database work when nothing changed. Two groups, each with its channel of
 * db/portal-changes.ts: the webhook pages (the destinations with their health, a destination's
 * delivery log, the inbound page, a lifecycle event with its deliveries), and the keys, team and
 * audit pages.
 *
 * It holds only where one process sees every write as it commits: an embedded PGlite database,
 * which one process owns (db/pglite-lock.ts) and whose triggers (migrations 0029, 0030) tell it of
 * each change before the writing call returns, whoever wrote (a member's edit, replay, rotation or
 * new key; the dispatcher's attempts; an inbound event; an API key's use; the health and retention
 * jobs). A change drops every entry of its group, so no page is ever shown older than the last
 * committed write. With PostgreSQL several processes write and nothing would tell this one in
 * time, so there it does not cache: every load reads, as before (PostgreSQL answers those reads in
 * parallel, well within the pages' budget).
 *
 * Entries also expire after `maxAgeMs`: the webhook health figures are over the 24 hours before
 * they were read, and the pages say when that was (docs/portal.md).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { LRUCache } from 'lru-cache';
import type { Database } from '../db/client.ts';
import { type ChangeChannel, onPortalChange } from '../db/portal-changes.ts';

export interface ChangeCache {
  /** The value cached under key, or load()'s, kept until a change or maxAgeMs. */
  get<T>(key: string, load: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The channel whose entry a read is filling, for the statements it runs, once a test asks for it
 * (`trackCacheFills`): it reads every table those statements name and fails when one has no
 * trigger on that channel, since a cached read of a table whose changes nobody announces would
 * show stale pages with no other test noticing (test/portal/change-cache-coverage.test.ts).
 * Only then: on Node 20 a process that has run one AsyncLocalStorage pays for it on every promise
 * and callback from then on, every API request included (~7 µs an answer on `/health`, measured
 * toggling it inside one process; Node 24's implementation is nearly free).
 */
let fills: AsyncLocalStorage<ChangeChannel> | undefined;

/** Tests: from now on, the channel of the entry being filled is `getStore()` of the answer. */
export function trackCacheFills(): AsyncLocalStorage<ChangeChannel> {
  fills ??= new AsyncLocalStorage<ChangeChannel>();
  return fills;
}

/** Reads every time: where nothing tells this process of every change (and in unit tests). */
export const uncached: ChangeCache = { get: (_key, load) => load(), close: async () => {} };

export async function createChangeCache(
  db: Database,
  channel: ChangeChannel,
  options: { maxAgeMs?: number; maxEntries?: number; now?: () => number } = {},
): Promise<ChangeCache> {
  const maxAgeMs = options.maxAgeMs ?? 10_000;
  const maxEntries = options.maxEntries ?? 500;
  const now = options.now ?? Date.now;
  // Past maxEntries the least recently used make room (lru-cache). Expiry is checked here, not
  // with lru-cache's ttl: that treats a start time of 0 as "no TTL" and keeps an entry at exactly
  // its age limit, and the tests' clocks (and this contract) expire it there.
  const entries = new LRUCache<string, { until: number; value: Promise<unknown> }>({
    max: maxEntries,
  });
  // A load that overlapped a change may have read before it: the change's clear() drops its entry,
  // which was stored when the load began.
  const stop = await onPortalChange(db, channel, () => entries.clear());
  if (!stop) return uncached;
  return {
    get<T>(key: string, load: () => Promise<T>): Promise<T> {
      const t = now();
      const hit = entries.get(key);
      if (hit && hit.until > t) return hit.value as Promise<T>;
      const value = fills ? fills.run(channel, load) : load();
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
