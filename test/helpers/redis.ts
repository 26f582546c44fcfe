/**
 * Redis for tests: suites that need Redis run when TEST_REDIS_URL (or REDIS_URL) is set. Each test
 * gets its own key prefix, so suites share one server without seeing each other's keys.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';

export function testRedisUrl(): string | undefined {
  return process.env.TEST_REDIS_URL || process.env.REDIS_URL || undefined;
}

export function uniqueRedisPrefix(): string {
  return `pys_test:${randomBytes(6).toString('hex')}:`;
}

/** A loopback port with nothing listening: a real "server down" for connection-failure tests. */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
