/**
 * A fixed-window counter: in process memory by default, in Redis when one is configured so that
 * several API processes count together. Used to limit repeated failed authentication per client.
 */
import type { Redis } from '../redis.ts';

export interface FixedWindowCounter {
  /** Counts one hit; returns the count in the current window and the ms until it resets. */
  hit(key: string, windowMs: number): Promise<{ count: number; resetMs: number }>;
  /** The current count without counting. */
  peek(key: string): Promise<{ count: number; resetMs: number }>;
}

export function createMemoryCounter(now: () => number = Date.now): FixedWindowCounter {
  const windows = new Map<string, { count: number; resetAt: number }>();
  const current = (key: string) => {
    const w = windows.get(key);
    if (w && w.resetAt > now()) return w;
    if (w) windows.delete(key);
    return undefined;
  };
  return {
    async hit(key, windowMs) {
      let w = current(key);
      if (!w) {
        // Drop expired windows now and then so the map cannot grow without bound.
        if (windows.size > 10_000) for (const k of [...windows.keys()]) current(k);
        w = { count: 0, resetAt: now() + windowMs };
        windows.set(key, w);
      }
      w.count++;
      return { count: w.count, resetMs: w.resetAt - now() };
    },
    async peek(key) {
      const w = current(key);
      return { count: w?.count ?? 0, resetMs: w ? w.resetAt - now() : 0 };
    },
  };
}

export function createRedisCounter(redis: Redis, prefix = 'pys:fw:'): FixedWindowCounter {
  return {
    async hit(key, windowMs) {
      const k = prefix + key;
      // INCR then set the expiry only if none is set (NX): the window starts at the first hit.
      const res = await redis.multi().incr(k).pexpire(k, windowMs, 'NX').pttl(k).exec();
      const count = Number(res?.[0]?.[1] ?? 0);
      const ttl = Number(res?.[2]?.[1] ?? windowMs);
      return { count, resetMs: ttl > 0 ? ttl : windowMs };
    },
    async peek(key) {
      const k = prefix + key;
      const [count, ttl] = await Promise.all([redis.get(k), redis.pttl(k)]);
      return { count: Number(count ?? 0), resetMs: Math.max(ttl, 0) };
    },
  };
}
