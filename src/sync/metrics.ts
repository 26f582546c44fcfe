/**
 * The daily metrics processor: for every deployed product of a chain and every closed UTC day since
 * its engine's deployment, reads the chain at the day-boundary block, stores the day's snapshot
 * (share prices, APYs, fee split, flows) and the day's operational alerts. A first start backfills
 * the whole history; later runs add each new day as it closes.
 *
 * Everything comes from the chain (state reads at the boundary and the engine's own Deposit and
 * Withdraw logs), not from the events table, so the figures stay independent of the log indexer.
 * A day is written once: rerunning it changes nothing, and its alerts are stored in the same
 * transaction as its row, so a row without its alerts (or the reverse) is never visible. The one
 * row it replaces is the PROVISIONAL row the lifecycle writes for the deployment day at activation
 * (src/db/snapshots.ts): such a row does not cover its day (coverage, latestFinal) and is never a
 * previous day, so the deployment day is computed and written as if it were absent.
 */

import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient } from '../chain/client.ts';
import { confirmedBlock } from '../chain/confirmed-head.ts';
import type { Database } from '../db/client.ts';
import { createEventsRepo, dedupeKey } from '../db/events.ts';
import { createProductsRepo } from '../db/products.ts';
import { createSnapshotsRepo, isFinal, type Snapshot } from '../db/snapshots.ts';
import type { Logger } from '../logger.ts';
import { createPeriodicJob, type Job } from '../worker/runner.ts';
import {
  addDays,
  type BlockTimes,
  createBlockTimes,
  daysBetween,
  findDayBoundaries,
  utcDate,
} from './day-boundary.ts';
import { createBoundaryReader } from './metrics/boundary-reads.ts';
import {
  computeSnapshot,
  dailyAlerts,
  REALISED_WINDOWS,
  withRealisedApys,
} from './metrics/compute.ts';
import { createFlowReader, type FlowReader } from './metrics/flows.ts';
import { type ProductPlan, planProduct, searchStart } from './metrics/plan.ts';
import { REORG_CHECK_DAYS, removeReorgedDays } from './metrics/reorg-check.ts';
import { estimateFromUnderlying, readUnderlyingEstimate } from './metrics/underlying-estimate.ts';

export interface MetricsProcessorDeps {
  db: Database;
  logger: Logger;
  chain: ChainSettings;
  client: ChainClient;
  now?: () => Date;
  /** Products processed at once (their chain reads overlap; their writes serialise). Default 4. */
  concurrency?: number;
  /**
   * Alerts are stored only for days at most this many days before today (default 2: yesterday and
   * the day before). See ALERT WINDOW below.
   */
  alertWindowDays?: number;
  /** Days per write transaction during a backfill. Default 100. */
  writeChunkDays?: number;
}

export interface MetricsRunResult {
  /** Snapshot rows written (inserted, or replacing a provisional row). */
  written: number;
}

export interface MetricsProcessor {
  runOnce(options?: { signal?: AbortSignal }): Promise<MetricsRunResult>;
  job(intervalMs: number): Job;
}

/*
 * ALERT WINDOW. A backfill computes alerts for historical days too, but stores only those of days
 * within `alertWindowDays` of today. The alternative, storing every historical alert, would make a
 * first start (or a product added with 200 days of history) flood the partner's endpoints with
 * months-old apy_change/tvl_alert webhooks that nobody can act on; alerts are operational signals,
 * and the history itself is served by apy-history and fee-stats. A window of 2 days still delivers
 * yesterday's alerts and those of a day missed while the worker was down for a day. Dedupe keys
 * (event_type, slug, date) make reruns and concurrent workers harmless either way.
 */
const DEFAULT_ALERT_WINDOW_DAYS = 2;

export function createMetricsProcessor(deps: MetricsProcessorDeps): MetricsProcessor {
  const { db, chain, client } = deps;
  const logger = deps.logger.child({ job: `metrics:${chain.chainId}` });
  const now = deps.now ?? (() => new Date());
  const concurrency = Math.max(1, deps.concurrency ?? 4);
  const alertWindowDays = deps.alertWindowDays ?? DEFAULT_ALERT_WINDOW_DAYS;
  const writeChunkDays = Math.max(1, deps.writeChunkDays ?? 100);
  const products = createProductsRepo(db);
  const snapshots = createSnapshotsRepo(db);
  const boundaryReader = createBoundaryReader(client);
  // Each engine's deployment block time, kept across runs: the block is confirmed when recorded,
  // and without this every idle run would read one block per product just to find its first day.
  const deployTimes = new Map<string, Promise<number>>();

  async function runOnce(options: { signal?: AbortSignal } = {}): Promise<MetricsRunResult> {
    const started = performance.now();
    const deployed = (await products.listDeployedOnChain(chain.chainId)).filter(
      (p) => p.status !== 'pending_deploy' && p.engineAddress !== null,
    );
    if (deployed.length === 0) return { written: 0 };

    // Block timestamps are cached for this run only: every block read is at or below the safe
    // head, which a reorg shallower than the confirmation depth cannot change.
    const times = createBlockTimes(client);
    // cacheTime 0: viem otherwise reuses a head up to its polling interval old.
    const head = await client.getBlockNumber({ cacheTime: 0 });
    const safeHead = await confirmedBlock(client, chain, head);
    if (safeHead < 0n) return { written: 0 };
    // Day D is closed once a confirmed block is at or after D+1 00:00 UTC: no block of D can still
    // appear, and D's boundary block is confirmed too. It must also be over by the wall clock.
    const today = utcDate(Math.floor(now().getTime() / 1000));
    // Rows of days whose blocks left the chain (a reorganisation deeper than the confirmation
    // setting) are removed first, and computed again below.
    const reorged = await removeReorgedDays(
      client,
      snapshots,
      chain.chainId,
      addDays(today, -REORG_CHECK_DAYS),
    );
    if (reorged.removed.length > 0) {
      logger.warn(
        {
          fromBlock: reorged.fromBlock?.toString(),
          days: [...new Set(reorged.removed.map((r) => r.date))].sort(),
          rows: reorged.removed.length,
        },
        'daily rows of blocks the chain no longer has removed: computing them again',
      );
    }
    const closedThrough = addDays(utcDate(await times.timestamp(safeHead)), -1);
    const yesterday = addDays(utcDate(Math.floor(now().getTime() / 1000)), -1);
    const lastDay = [closedThrough, yesterday].sort()[0]!; // ISO dates sort as days

    const plans: ProductPlan[] = [];
    for (const product of deployed) {
      if (product.deployedBlock === null) {
        logger.warn({ slug: product.slug }, 'deployed product without a deployment block; skipped');
        continue;
      }
      if (product.deployedBlock > safeHead) continue;
      const key = `${product.id}:${product.deployedBlock}`;
      let deployedAt = deployTimes.get(key);
      if (!deployedAt) {
        deployedAt = times.timestamp(product.deployedBlock);
        deployedAt.catch(() => deployTimes.delete(key));
        deployTimes.set(key, deployedAt);
      }
      const plan = await planProduct(
        snapshots,
        product,
        product.deployedBlock,
        {
          timestamp: (b) => (b === product.deployedBlock ? deployedAt : times.timestamp(b)),
        },
        lastDay,
      );
      if (plan.days.length > 0) plans.push(plan);
    }
    if (plans.length === 0) return { written: 0 };

    const boundaries = await findDayBoundaries(
      times,
      plans.flatMap((p) => p.days),
      searchStart(plans),
      safeHead,
    );
    // One flow sweep per block range for every engine of the chain, shared by the products.
    const flowReader = createFlowReader(client, {
      engines: plans.map((p) => p.engine),
      maxBlocks: BigInt(Math.max(1, chain.blockRangeLimit)),
    });
    let written = 0;
    await forEachLimit(plans, concurrency, async (plan) => {
      if (options.signal?.aborted) return;
      // Read the result first: `written += await …` would add to a stale value of `written`.
      const n = await processProduct(plan, boundaries, times, today, flowReader);
      written += n;
    });
    if (written > 0) {
      logger.info(
        { written, products: plans.length, ms: Math.round(performance.now() - started) },
        'daily snapshots written',
      );
    }
    return { written };
  }

  /** Reads, computes and stores the product's missing days; returns the rows inserted. */
  async function processProduct(
    plan: ProductPlan,
    boundaries: Map<string, bigint>,
    times: BlockTimes,
    today: string,
    flowReader: FlowReader,
  ): Promise<number> {
    const { product, engine } = plan;
    const blockOf = (day: string) => {
      const b = boundaries.get(day);
      if (b === undefined) throw new Error(`no boundary for ${day}`);
      return b;
    };
    // Blocks after which each missing day's flows start: the previous day's boundary, or just
    // before the deployment block on the engine's first day.
    const fromAfter = (day: string): bigint => {
      const prevDay = addDays(day, -1);
      const existing = plan.existing.get(prevDay);
      if (existing) return existing.blockNumber;
      const b = boundaries.get(prevDay);
      return b ?? plan.deployedBlock - 1n;
    };

    const [reads, flows] = await Promise.all([
      // All days' state reads at once: independent calls, sent as JSON-RPC batches.
      Promise.all(
        plan.days.map((day) =>
          boundaryReader.read({
            engine,
            underlyingVault: product.underlyingVaultAddress,
            blockNumber: blockOf(day),
            times,
          }),
        ),
      ),
      flowReader.read(
        engine,
        plan.days.map((day) => ({ day, after: fromAfter(day), through: blockOf(day) })),
      ),
    ]);

    // Each row keeps its boundary block's hash, for the reorg check of later runs.
    const hashes = await Promise.all(
      plan.days.map((day) => (times.hash ? times.hash(blockOf(day)) : Promise.resolve(null))),
    );
    const rows: Snapshot[] = [];
    const alerts: { row: Snapshot; alert: ReturnType<typeof dailyAlerts>[number] }[] = [];
    const computed = new Map<string, Snapshot>();
    // The stored rows that may start a realised-APY window of a missing day (up to 30 days back).
    const windowStarts = new Map<string, Snapshot>();
    const firstDay = plan.days[0];
    if (firstDay !== undefined) {
      const stored = await createSnapshotsRepo(db).listRange(
        product.id,
        addDays(firstDay, -Math.max(...REALISED_WINDOWS)),
        addDays(firstDay, -1),
      );
      for (const r of stored) if (isFinal(r)) windowStarts.set(r.date, r);
    }
    const windowStart = (day: string, n: number) => {
      const d = addDays(day, -n);
      return computed.get(d) ?? plan.existing.get(d) ?? windowStarts.get(d) ?? null;
    };
    for (const [i, day] of plan.days.entries()) {
      const prevDay = addDays(day, -1);
      const prev = computed.get(prevDay) ?? plan.existing.get(prevDay) ?? null;
      const row = computeSnapshot(product.id, day, reads[i]!, flows.get(day)!, prev);
      row.blockHash = hashes[i]!;
      withRealisedApys(row, (n) => windowStart(day, n));
      if (row.underlyingApy === null || row.netApyForUser === null) {
        // No APY of the engine's own (its first day, or an empty engine): the launch-day
        // estimate from the underlying's day (underlying-estimate.ts). With a previous row its
        // underlying totals are at hand; on the first day the underlying is read at D−1's boundary.
        const totalFeeBps = product.serviceFeeBps + product.partnerFeeBps;
        const cur = {
          totalAssets: row.underlyingTotalAssets,
          totalSupply: row.underlyingTotalSupply,
        };
        const estimate = prev
          ? estimateFromUnderlying(
              { totalAssets: prev.underlyingTotalAssets, totalSupply: prev.underlyingTotalSupply },
              cur,
              totalFeeBps,
            )
          : await readUnderlyingEstimate(client, {
              vault: product.underlyingVaultAddress,
              day,
              totalFeeBps,
              hi: blockOf(day),
              times,
              curTotals: cur,
            });
        row.estimatedUnderlyingApy = estimate?.underlyingApy ?? null;
        row.estimatedNetApy = estimate?.netApyForUser ?? null;
      }
      computed.set(day, row);
      rows.push(row);
      if (daysBetween(day, today) <= alertWindowDays) {
        for (const alert of dailyAlerts(product.slug, product.assetDecimals, prev, row)) {
          alerts.push({ row, alert });
        }
      }
    }

    let written = 0;
    for (let i = 0; i < rows.length; i += writeChunkDays) {
      const chunk = rows.slice(i, i + writeChunkDays);
      const chunkDays = new Set(chunk.map((r) => r.date));
      written += await db.transaction(async (tx) => {
        const inserted = await createSnapshotsRepo(tx).insertMany(chunk);
        const events = createEventsRepo(tx);
        for (const { row, alert } of alerts) {
          // Only with the write that created the day: a rerun (or another worker) stores nothing.
          if (!chunkDays.has(row.date) || !inserted.has(`${row.productId}|${row.date}`)) continue;
          await events.insert({
            partnerId: product.partnerId,
            environment: product.environment,
            productId: product.id,
            eventType: alert.eventType,
            dedupeKey: dedupeKey.daily(alert.eventType, product.slug, row.date),
            payload: alert.payload,
            occurredAt: row.blockTimestamp,
          });
        }
        return inserted.size;
      });
    }
    return written;
  }

  return {
    runOnce,
    job(intervalMs) {
      return createPeriodicJob({
        name: `metrics:${chain.chainId}`,
        intervalMs,
        logger,
        tick: async (signal) => {
          await runOnce({ signal });
        },
      });
    },
  };
}

async function forEachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
