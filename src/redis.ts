/**
 * The Redis client factory. Redis is optional: set REDIS_URL when several API processes must share
 * rate-limit budgets and cache invalidation. Commands fail fast while Redis is unreachable instead
 * of queueing without bound, so a request never hangs on it.
 */
import { Redis } from 'ioredis';

export type { Redis };

export function createRedis(url: string, options: { keyPrefix?: string } = {}): Redis {
  return new Redis(url, {
    keyPrefix: options.keyPrefix,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 2000,
    // Reconnect with a capped backoff for as long as the process lives.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
}
