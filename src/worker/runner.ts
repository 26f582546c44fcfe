/**
 * The worker role: a set of background jobs started together and stopped together. Stopping asks
 * every job to stop taking new work and waits until its in-flight work has finished.
 */
import type { Logger } from '../logger.ts';

export interface Job {
  readonly name: string;
  start(): void;
  /** Resolves once in-flight work is done; no new work starts after it is called. */
  stop(): Promise<void>;
}

/**
 * A job that runs `tick` now and then every `intervalMs` after the previous tick ends (never two
 * ticks at once). A failing tick is logged and retried at the next interval; it never kills the
 * process.
 */
export function createPeriodicJob(options: {
  name: string;
  intervalMs: number;
  logger: Logger;
  tick: (signal: AbortSignal) => Promise<void>;
}): Job {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(run, delay);
  };
  const run = () => {
    running = options
      .tick(controller.signal)
      .catch((err: unknown) => {
        if (!stopped) options.logger.error({ err, job: options.name }, 'job tick failed');
      })
      .finally(() => {
        running = undefined;
        schedule(options.intervalMs);
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
