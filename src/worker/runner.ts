/**
 * The worker role: a set of background jobs started together and stopped together. Stopping asks
 * every job to stop taking new work and waits until its in-flight work has finished.
 */
import type { Logger } from '../logger.ts';
import { jobTickFailures } from '../telemetry/metrics.ts';
import { isRetryable } from './errors.ts';

export interface Job {
  readonly name: string;
  start(): void;
  /** Resolves once in-flight work is done; no new work starts after it is called. */
  stop(): Promise<void>;
}

export interface BackoffOptions {
  /** The longest wait after failures (and the wait after a failure that is not retryable). */
  maxMs?: number;
  /** [0, 1): the jitter's source (tests pass a constant). */
  random?: () => number;
}

export const DEFAULT_MAX_BACKOFF_MS = 30_000;

/**
 * The wait before the next tick after `failures` failures in a row: the interval doubled per
 * failure, capped at maxMs, with "equal jitter" (half fixed, half random) so that workers that
 * failed together (a database restart) do not all come back in the same millisecond.
 */
export function backoffDelay(
  intervalMs: number,
  failures: number,
  options: BackoffOptions = {},
): number {
  const maxMs = Math.max(intervalMs, options.maxMs ?? DEFAULT_MAX_BACKOFF_MS);
  const exp = Math.min(maxMs, intervalMs * 2 ** Math.min(failures, 30));
  const random = options.random ?? Math.random;
  return Math.round(exp / 2 + (exp / 2) * random());
}

/**
 * A job that runs `tick` now and then every `intervalMs` after the previous tick ends (never two
 * ticks at once). A failing tick never kills the process: it is logged, and the next tick waits
 * longer: doubling per failure in a row (capped) when the error is retryable (an outage passes
 * without hammering the database or the RPC), the cap at once when it is not (a bug does not pass
 * by retrying, and must not fill the logs). A success returns to the interval.
 */
export function createPeriodicJob(options: {
  name: string;
  intervalMs: number;
  logger: Logger;
  tick: (signal: AbortSignal) => Promise<void>;
  backoff?: BackoffOptions;
}): Job {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let failures = 0;

  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(run, delay);
  };
  const run = () => {
    let delay = options.intervalMs;
    running = options
      .tick(controller.signal)
      .then(() => {
        failures = 0;
      })
      .catch((err: unknown) => {
        if (stopped) return;
        failures++;
        const retryable = isRetryable(err);
        delay = retryable
          ? backoffDelay(options.intervalMs, failures, options.backoff)
          : backoffDelay(options.intervalMs, Number.POSITIVE_INFINITY, options.backoff);
        jobTickFailures.inc({ job: options.name, retryable: String(retryable) });
        const fields = { err, job: options.name, retryable, failures, retryInMs: delay };
        if (retryable) options.logger.warn(fields, 'job tick failed');
        else options.logger.error(fields, 'job tick failed');
      })
      .finally(() => {
        running = undefined;
        schedule(delay);
      });
  };

  return {
    name: options.name,
    start() {
      schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      controller.abort();
      await running;
    },
  };
}

export interface Worker {
  start(): void;
  stop(): Promise<void>;
}

export function createWorker(jobs: readonly Job[], logger: Logger): Worker {
  return {
    start() {
      for (const job of jobs) job.start();
      logger.info({ jobs: jobs.map((j) => j.name) }, 'worker started');
    },
    async stop() {
      await Promise.all(jobs.map((j) => j.stop()));
      logger.info('worker stopped');
    },
  };
}
