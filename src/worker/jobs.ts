/**
 * Every job of the worker role, assembled here and nowhere else. Per chain: the product lifecycle,
 * the log indexer, the daily metrics processor and the exit follower (`exits:<id>`); once per process: the webhook dispatcher, the
 * webhook maintenance (endpoint health, retention) and the inbound linker. The lifecycle and the indexer hold a lease per chain (`lifecycle:<id>`,
 * `indexer:<id>`), the processor's writes are idempotent (one row per product and day) and the
 * dispatcher claims each attempt under its own lease, so several worker processes can run the
 * same list.
 */
import type { Database } from '../db/client.ts';
import type { Logger } from '../logger.ts';
import type { ChainRuntime } from '../sync/chain-runtime.ts';
import { createExitFollower } from '../sync/exits.ts';
import { createIndexer } from '../sync/indexer.ts';
import { createLifecycle, defaultHolder } from '../sync/lifecycle.ts';
import { createMetricsProcessor } from '../sync/metrics.ts';
import { createDispatcher } from '../webhooks/dispatcher.ts';
import { createInboundLinker } from '../webhooks/inbound-linker.ts';
import { createWebhookMaintenance, type MaintenanceSettings } from '../webhooks/maintenance.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import type { Sender } from '../webhooks/sender.ts';
import type { Job } from './runner.ts';

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
  /** Outbound webhooks: how they are sent and how their destinations' secrets are opened. */
  webhooks: { sender: Sender; secretBox: SecretBox; maintenance?: Partial<MaintenanceSettings> };
  holder?: string;
  intervals?: Partial<WorkerJobIntervals>;
  /**
   * How long a dead worker's leases hold: the lifecycle's and the indexer's per chain, and a
   * claimed delivery attempt's. The defaults are the service's; fault tests that kill workers
   * shorten them so a restart takes over in seconds.
   */
  leases?: { lifecycleTtlMs?: number; indexerTtlMs?: number; deliveryMs?: number };
}): Job[] {
  const { db, logger, runtime } = options;
  const holder = options.holder ?? defaultHolder();
  const intervals = { ...DEFAULT_INTERVALS, ...options.intervals };
  const leases = options.leases ?? {};
  const jobs: Job[] = [];
  for (const chain of runtime.chains) {
    const client = runtime.clients.get(chain.chainId);
    if (!client) throw new Error(`no client for chain ${chain.chainId}`);
    jobs.push(
      createLifecycle({ db, logger, chain, client, holder, leaseTtlMs: leases.lifecycleTtlMs }).job(
        intervals.lifecycleMs,
      ),
    );
    jobs.push(
      createIndexer({ db, logger, chain, client, holder, leaseTtlMs: leases.indexerTtlMs }).job(
        intervals.indexerMs,
      ),
    );
    jobs.push(createMetricsProcessor({ db, logger, chain, client }).job(intervals.metricsMs));
    // Redeem requests followed to their claim (redeem.claimable), as often as the indexer.
    jobs.push(createExitFollower({ db, logger, chain, client, holder }).job(intervals.indexerMs));
  }
  const { maintenance, ...sending } = options.webhooks;
  jobs.push(createDispatcher({ db, logger, ...sending, leaseMs: leases.deliveryMs }).job());
  jobs.push(
    createWebhookMaintenance({
      db,
      logger,
      ...(maintenance ? { settings: maintenance } : {}),
    }).job(),
  );
  jobs.push(createInboundLinker({ db, logger }).job());
  return jobs;
}
