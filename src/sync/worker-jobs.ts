/**
 * The worker role's jobs, per chain: the product lifecycle, the log indexer and the daily metrics
 * processor. The lifecycle and the indexer hold a lease per chain (`lifecycle:<id>`, `indexer:<id>`)
 * and the processor's writes are idempotent (one row per product and day), so several worker
 * processes can run the same list.
 */
import type { Database } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import type { Job } from '../worker/runner.ts';
import type { ChainRuntime } from './chain-runtime.ts';
import { createIndexer } from './indexer.ts';
import { createLifecycle, defaultHolder } from './lifecycle.ts';
import { createMetricsProcessor } from './metrics.ts';

export interface WorkerJobIntervals {
  lifecycleMs: number;
  indexerMs: number;
  metricsMs: number;
}

/**
 * Lifecycle and indexer every 2 s: a pending product on the local chain is active, and a deposit
 * confirmed, within seconds. The daily metrics need no more than a minute.
 */
export const DEFAULT_INTERVALS: WorkerJobIntervals = {
  lifecycleMs: 2_000,
  indexerMs: 2_000,
  metricsMs: 60_000,
};

export function buildWorkerJobs(options: {
  db: Database;
  logger: Logger;
  runtime: Pick<ChainRuntime, 'chains' | 'clients'>;
  holder?: string;
  intervals?: Partial<WorkerJobIntervals>;
}): Job[] {
  const { db, logger, runtime } = options;
  const holder = options.holder ?? defaultHolder();
  const intervals = { ...DEFAULT_INTERVALS, ...options.intervals };
  const jobs: Job[] = [];
  for (const chain of runtime.chains) {
    const client = runtime.clients.get(chain.chainId);
    if (!client) throw new Error(`no client for chain ${chain.chainId}`);
    jobs.push(createLifecycle({ db, logger, chain, client, holder }).job(intervals.lifecycleMs));
    jobs.push(createIndexer({ db, logger, chain, client, holder }).job(intervals.indexerMs));
    jobs.push(createMetricsProcessor({ db, logger, chain, client }).job(intervals.metricsMs));
  }
  return jobs;
}
