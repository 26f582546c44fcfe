/**
 * Redis for tests: suites that need Redis run when TEST_REDIS_URL (or REDIS_URL) is set. Each test
 * gets its own key prefix, so suites share one server without seeing each other's keys.
 */
import { randomBytes } from 'node:crypto';

export function testRedisUrl(): string | undefined {
  return process.env.TEST_REDIS_URL || process.env.REDIS_URL || undefined;
}

export function uniqueRedisPrefix(): string {
  return `pys_test:${randomBytes(6).toString('hex')}:`;
}
