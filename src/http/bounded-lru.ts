/**
 * A least-recently-used map of at most `maxEntries` entries that grows as it fills. lru-cache
 * allocates its slot arrays for `max` entries up front (a 50,000-entry bound with a TTL is about
 * 2 MB, all of it resident at once); the API holds a dozen such caches that stay nearly empty. Bounded
 * by `maxSize` with every entry counting one, lru-cache keeps the same eviction order in arrays that
 * grow with the entries (#33 item 7, RSS).
 */
import { LRUCache } from 'lru-cache';

const ONE = () => 1;

export function boundedLru<K extends {}, V extends {}>(
  maxEntries: number,
  options: { ttl?: number } = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: maxEntries, sizeCalculation: ONE });
}
