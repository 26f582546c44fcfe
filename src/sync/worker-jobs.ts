/**
 * The worker role's jobs, per chain: the product lifecycle, the log indexer and the daily metrics
 * processor. Each job of a chain holds its own lease (`lifecycle:<id>`, `indexer:<id>`, …), so
 * several worker processes can run the same list and split nothing twice.
 */
import type { Database } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import type { Job } from '../worker/runner.ts';
import type { ChainRuntime } from './chain-runtime.ts';
import { createLifecycle, defaultHolder } from './lifecycle.ts';

export interface WorkerJobIntervals {
  lifecycleMs: number;
  indexerMs: number;
  metricsMs: number;
}

/** Lifecycle every 2 s: a pending product on a local chain is active within seconds. */
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
    // TODO(wiring, owner: lead): add the indexer and the metrics processor once their modules are
    // committed (agreed APIs):
    //   createIndexer({ db, logger, chain, client, holder }).job(intervals.indexerMs)
    //     from './indexer.ts'
    //   createMetricsProcessor({ db, logger, chain, client }).job(intervals.metricsMs)
    //     from './metrics.ts'
  }
  return jobs;
}
