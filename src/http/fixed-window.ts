/**
 * A fixed-window counter: in process memory by default, in Redis when one is configured so that
 * several API processes count together. Used to limit failed authentication per client address,
 * the embed's requests, and (in memory, with an injectable clock) the per-key budgets.
 *
 * `hit` is atomic on every store: it counts and answers the new count in one step (one synchronous
 * block in memory, one script on Redis), so N concurrent hits always see 1..N, never a count read
 * before another request's increment.
 */
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis } from '../redis.ts';
import { boundedLru } from './bounded-lru.ts';

export interface FixedWindowCounter {
  /** Counts one hit; returns the count in the current window, this one included, and the ms until it resets. */
  hit(key: string, windowMs: number): Promise<{ count: number; resetMs: number }>;
  /** The same, answered at once: counters in this process's memory only (no promise per hit). */
  hitNow?(key: string, windowMs: number): { count: number; resetMs: number };
}

/** Windows kept in memory at most (a spray of addresses must not grow memory without bound). */
const MAX_MEMORY_WINDOWS = 50_000;

export function createMemoryCounter(now: () => number = Date.now): FixedWindowCounter {
  // Past MAX_MEMORY_WINDOWS the least recently hit windows are dropped (bounded-lru.ts); a window's end
  // is checked here, against the counter's own clock.
  const windows = boundedLru<string, { count: number; resetAt: number }>(MAX_MEMORY_WINDOWS);
  const hitNow = (key: string, windowMs: number) => {
    const at = now();
    let w = windows.get(key);
    if (!w || w.resetAt <= at) {
      w = { count: 0, resetAt: at + windowMs };
      windows.set(key, w);
    }
    w.count++;
    return { count: w.count, resetMs: w.resetAt - at };
  };
  return {
    hit: async (key, windowMs) => hitNow(key, windowMs),
    hitNow,
  };
}

/**
 * INCR, and start the window's expiry on its first hit (or repair a key left without one), then
 * answer the count and the time left: one round trip, atomic (Redis runs a script alone).
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { count, ttl }`;

export function createRedisCounter(redis: Redis, prefix = 'pys:fw:'): FixedWindowCounter {
  return {
    async hit(key, windowMs) {
      const [count, ttl] = (await redis.eval(HIT_SCRIPT, 1, prefix + key, windowMs)) as [
        number,
        number,
      ];
      return { count: Number(count), resetMs: Number(ttl) > 0 ? Number(ttl) : windowMs };
    },
  };
}

/**
 * The counter while Redis may be away: Redis's shared count when its connection is up and answers,
 * else this process's own memory (`local`). Budgets then hold per process instead of across
 * processes (with N API processes a key gets at most N times its budget), rather than not at all:
 * before, every request went uncounted while Redis was unreachable (#33; docs/maintainers/operations.md).
 * Windows counted locally are forgotten once Redis is back; Redis's own count resumes.
 */
export function createFallbackCounter(
  redis: Redis,
  prefix: string,
  local: FixedWindowCounter,
): FixedWindowCounter {
  const shared = createRedisCounter(redis, prefix);
  return {
    async hit(key, windowMs) {
      // Not connected: straight to memory, no command waits on a connection being re-established.
      // Before the first connection, commands wait for it (src/redis.ts's offline queue), so that
      // a process that just started counts in Redis from its first request.
      if (redis.status === 'ready' || redis.options.enableOfflineQueue) {
        try {
          return await shared.hit(key, windowMs);
        } catch {
          // Unreachable or silent (the command timed out): counted here instead.
        }
      }
      return local.hit(key, windowMs);
    },
  };
}

/**
 * A store for @fastify/rate-limit over a fixed-window counter, used by the embed's per-address
 * limit (the partner API's per-key budgets call the counter from the partner scope's own hook, with
 * the same Redis keys and headers). Why not the plugin's own stores: its LocalStore reads
 * Date.now() (ours counts with an injectable clock, so tests end a window when they say), and its
 * RedisStore gives up while Redis is unreachable (with skipOnError every request then goes
 * uncounted; ours counts in this process's memory meanwhile, createFallbackCounter above). The
 * Redis keys are the plugin's RedisStore's shape (`<prefix><key>`, INCR then PEXPIRE), so
 * processes of either kind share one count during a rolling deploy.
 */
export function rateLimitStore(makeCounter: () => FixedWindowCounter): FastifyRateLimitStoreCtor {
  return class CounterStore implements FastifyRateLimitStore {
    readonly counter = makeCounter();
    incr(
      key: string,
      callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
      timeWindow: number,
    ) {
      this.counter.hit(key, timeWindow).then(
        ({ count, resetMs }) => callback(null, { current: count, ttl: resetMs }),
        (err: Error) => callback(err),
      );
    }
    child() {
      return new CounterStore();
    }
  };
}
