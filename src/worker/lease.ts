/**
 * Work under a named lease: with several worker processes, exactly one does a lease's work at a
 * time (the indexer and the lifecycle of a chain). The lease is taken (or renewed) at the start of
 * every round; work that must not commit once the lease is lost renews it inside its own
 * transaction (renewIn). Stopping the job hands the lease back, so another worker takes over at
 * once instead of waiting for the lease to expire.
 */
import type { Queryable } from '../db/client.ts';
import { createLeasesRepo } from '../db/leases.ts';
import type { Logger } from '../logger.ts';
import { RetryableError } from './errors.ts';
import { type BackoffOptions, createPeriodicJob, type Job } from './runner.ts';

/** This process no longer holds the lease: another took it over. Its next round may take it back. */
export class LeaseLostError extends RetryableError {
  override name = 'LeaseLostError';
}

export interface LeaseOptions {
  db: Queryable;
  name: string;
  /** Identity of this process in the lease table (e.g. hostname:pid:random). */
  holder: string;
  ttlMs: number;
}

export interface Lease {
  readonly name: string;
  readonly holder: string;
  /**
   * Runs fn when this process holds (or takes) the lease; `undefined` without running it when
   * another holder has it.
   */
  run<T>(fn: () => Promise<T>): Promise<{ value: T } | undefined>;
  /** Extends the lease inside `tx`; throws LeaseLostError when another holder has it. */
  renewIn(tx: Queryable): Promise<void>;
  release(): Promise<void>;
}

export function createLease(options: LeaseOptions): Lease {
  const { name, holder, ttlMs } = options;
  const leases = createLeasesRepo(options.db);
  return {
    name,
    holder,
    async run(fn) {
      if (!(await leases.acquire(name, holder, ttlMs))) return undefined;
      return { value: await fn() };
    },
    async renewIn(tx) {
      if (!(await createLeasesRepo(tx).renew(name, holder, ttlMs))) {
        throw new LeaseLostError(`lease ${name} lost by ${holder}`);
      }
    },
    release: () => leases.release(name, holder),
  };
}

/** A periodic job whose ticks run under `lease`; stopping it waits for the tick, then releases. */
export function createLeasedJob(options: {
  lease: Lease;
  intervalMs: number;
  logger: Logger;
  /** The round; it takes the lease itself (lease.run), so a direct call behaves as the job's. */
  tick: (signal: AbortSignal) => Promise<unknown>;
  backoff?: BackoffOptions;
}): Job {
  const { lease, logger } = options;
  const periodic = createPeriodicJob({
    name: lease.name,
    intervalMs: options.intervalMs,
    logger,
    backoff: options.backoff,
    tick: async (signal) => {
      await options.tick(signal);
    },
  });
  return {
    name: periodic.name,
    start: () => periodic.start(),
    async stop() {
      await periodic.stop();
      await lease.release().catch((err: unknown) => {
        logger.warn({ err, lease: lease.name }, 'releasing the lease failed');
      });
    },
  };
}
