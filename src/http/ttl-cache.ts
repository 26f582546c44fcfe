/**
 * Short-lived memory of reads that are costly to repeat (a live chain read): the promise of a
 * read is kept for `ttlMs`, so concurrent and close requests share one read; a read that fails is
 * not kept, so the next request tries again. At most `max` keys (a flood of wallet addresses must
 * not grow it without bound): the least recently used are dropped (bounded-lru.ts). `ttlMs` 0 keeps nothing.
 */
import { boundedLru } from './bounded-lru.ts';

export interface TtlCache<T> {
  get(key: string, load: () => Promise<T>): Promise<T>;
  /** The read kept for key, if it is still within its time; nothing is loaded. */
  peek(key: string): Promise<T> | undefined;
}

export function createTtlCache<T>(ttlMs: number, max = 50_000): TtlCache<T> {
  if (ttlMs <= 0) return { get: (_key, load) => load(), peek: () => undefined };
  const entries = boundedLru<string, { value: Promise<T> }>(max, { ttl: ttlMs });
  return {
    get(key, load) {
      const hit = entries.get(key);
      if (hit) return hit.value;
      const value = load();
      entries.set(key, { value });
      value.catch(() => {
        if (entries.get(key)?.value === value) entries.delete(key);
      });
      return value;
    },
    peek: (key) => entries.get(key)?.value,
  };
}
