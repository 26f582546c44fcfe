/**
 * Storage and cache outages: a request that fails because PostgreSQL or Redis cannot be reached
 * answers 503 service_unavailable with Retry-After (the catalogue's retryable code says what it
 * is), not 500 internal_error. The outage is logged once at warn when it starts and once at info
 * when it ends, not once per request at error: an outage is one event for whoever is on call,
 * and during one every request would otherwise add an error line (#33).
 */

import type { FastifyRequest } from 'fastify';
import { NETWORK_ERROR_CODES } from '../errors.ts';
import type { Logger } from '../logger.ts';

export type Dependency = 'database' | 'redis';

/** Seconds a client should wait before retrying during an outage (Retry-After). */
export const OUTAGE_RETRY_AFTER_S = 5;

/**
 * An outage is over once no request failed on it for this long; the next failure starts a new
 * one (logged again). Short enough that a second outage is reported, long enough that a flapping
 * connection is one outage.
 */
const QUIET_MS = 10_000;

/** ioredis's errors for a connection that is closed, not writable, or does not answer in time. */
const REDIS_UNAVAILABLE =
  /^(Connection is closed\.|Command timed out|Stream isn't writeable|Reached the max retries per request limit)/;

/** pg's messages for a connection it lost or could not get, which carry no code. */
const PG_LOST =
  /Connection terminated|terminating connection|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed and is not queryable|Cannot use a pool after calling end/i;

/**
 * Which dependency an error says is unreachable, or undefined for any other failure (a bug, a
 * constraint: still 500). SQLSTATE class 08 (connection exception), 53 (insufficient resources:
 * too many connections), 57P01–57P03 (the server is shutting down or starting).
 */
export function outageOf(err: unknown): Dependency | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, message, name } = e as { code?: unknown; message?: unknown; name?: unknown };
    if (name === 'MaxRetriesPerRequestError') return 'redis';
    if (typeof message === 'string' && REDIS_UNAVAILABLE.test(message)) return 'redis';
    if (typeof code === 'string') {
      if (NETWORK_ERROR_CODES.has(code)) return 'database';
      if (/^(08|53)[0-9A-Z]{3}$/.test(code) || /^57P0[123]$/.test(code)) return 'database';
    }
    if (typeof message === 'string' && PG_LOST.test(message)) return 'database';
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export interface OutageLog {
  /** Records a request answered 503 because `dependency` is unreachable. */
  report(dependency: Dependency, err: unknown): void;
}

export function createOutageLog(logger: Logger, quietMs = QUIET_MS): OutageLog {
  const open = new Map<Dependency, { since: number; requests: number; timer: NodeJS.Timeout }>();
  return {
    report(dependency, err) {
      let outage = open.get(dependency);
      if (!outage) {
        logger.warn(
          { dependency, err },
          `${dependency} unreachable: requests that need it answer 503 service_unavailable`,
        );
        outage = { since: Date.now(), requests: 0, timer: undefined as unknown as NodeJS.Timeout };
        open.set(dependency, outage);
      }
      outage.requests++;
      clearTimeout(outage.timer);
      const current = outage;
      current.timer = setTimeout(() => {
        open.delete(dependency);
        logger.info(
          { dependency, requests: current.requests, durationMs: Date.now() - current.since },
          `${dependency} outage over: no request failed on it for ${quietMs / 1000} s`,
        );
      }, quietMs);
      // Never what keeps a process alive.
      current.timer.unref();
    },
  };
}

/** Requests answered 503 because of an outage: the access log writes them at info, not error. */
const outageAnswers = new WeakSet<FastifyRequest>();
export const markOutageAnswer = (request: FastifyRequest) => outageAnswers.add(request);
export const isOutageAnswer = (request: FastifyRequest) => outageAnswers.has(request);

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's outage log (src/http/outage.ts), shared by every error handler of the app. */
    outages: OutageLog;
  }
}
