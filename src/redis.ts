/**
 * The Redis client factory. Redis is optional: set REDIS_URL when several API processes must share
 * rate-limit budgets and cache invalidation. Commands fail fast while Redis is unreachable instead
 * of queueing without bound, so a request never hangs on it.
 */
import { Redis } from 'ioredis';

export type { Redis };

export function createRedis(url: string, options: { keyPrefix?: string } = {}): Redis {
  const client = new Redis(url, {
    keyPrefix: options.keyPrefix,
    maxRetriesPerRequest: 1,
    // Queued only until the first connection: a command issued at start waits for it.
    enableOfflineQueue: true,
    connectTimeout: 2000,
    // A Redis that accepts but does not answer (hung, overloaded) holds no request longer.
    commandTimeout: 1000,
    // Reconnect with a capped backoff for as long as the process lives.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  // Once connected, a command issued while Redis is away fails at once instead of waiting in the
  // offline queue for a reconnection: the callers fail open (rate limits, docs/operations.md), and
  // a request must not wait seconds per command. Measured by test/ops/faults.test.ts: with the
  // queue, each API request took ~3 s during a Redis outage.
  client.once('ready', () => {
    client.options.enableOfflineQueue = false;
  });
  return client;
}
