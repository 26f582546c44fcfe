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
import type { AbiEvent } from 'viem';
import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient } from '../chain/client.ts';
import { yieldEngineAbi } from '../chain/generated/index.ts';
import { readEngineFigures } from '../chain/read-engine-figures.ts';
import { readPendingFees } from '../chain/read-pending-fees.ts';
import { readVaultTotals, type VaultTotals } from '../chain/read-vault-totals.ts';
import type { Database } from '../db/client.ts';
import { createEventsRepo, dedupeKey } from '../db/events.ts';
import { createProductsRepo, type Product } from '../db/products.ts';
import { createSnapshotsRepo, isFinal, type Snapshot } from '../db/snapshots.ts';
import type { Logger } from '../logger.ts';
import { createPeriodicJob, type Job } from '../worker/runner.ts';
import {
  addDays,
  type BlockTimes,
  createBlockTimes,
  DAY_SECONDS,
  dayStartSeconds,
  daysBetween,
  lastBlockBefore,
  utcDate,
} from './day-boundary.ts';
import {
  type BoundaryReads,
  computeSnapshot,
  type DayFlows,
  dailyAlerts,
} from './metrics/compute.ts';
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

const depositEvent = yieldEngineAbi.find(
  (x): x is Extract<(typeof yieldEngineAbi)[number], { type: 'event'; name: 'Deposit' }> =>
    x.type === 'event' && x.name === 'Deposit',
)!;
const withdrawEvent = yieldEngineAbi.find(
  (x): x is Extract<(typeof yieldEngineAbi)[number], { type: 'event'; name: 'Withdraw' }> =>
    x.type === 'event' && x.name === 'Withdraw',
)!;

/** A product's work in one run: the days it lacks, in order, and what precedes the first one. */
interface ProductPlan {
  product: Product;
  engine: `0x${string}`;
  deployedBlock: bigint;
  /** Missing days, oldest first. */
  days: string[];
  /** Existing rows by date (the previous day of a missing day, when it exists). */
  existing: Map<string, Snapshot>;
}

export function createMetricsProcessor(deps: MetricsProcessorDeps): MetricsProcessor {
  const { db, chain, client } = deps;
  const logger = deps.logger.child({ job: `metrics:${chain.chainId}` });
  const now = deps.now ?? (() => new Date());
  const concurrency = Math.max(1, deps.concurrency ?? 4);
  const alertWindowDays = deps.alertWindowDays ?? DEFAULT_ALERT_WINDOW_DAYS;
  const writeChunkDays = Math.max(1, deps.writeChunkDays ?? 100);
  const products = createProductsRepo(db);
  const snapshots = createSnapshotsRepo(db);

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
    const safeHead = head - BigInt(chain.confirmationDepth);
    if (safeHead < 0n) return { written: 0 };
    // Day D is closed once a confirmed block is at or after D+1 00:00 UTC: no block of D can still
    // appear, and D's boundary block is confirmed too. It must also be over by the wall clock.
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
      const plan = await planProduct(product, product.deployedBlock, times, lastDay);
      if (plan.days.length > 0) plans.push(plan);
    }
    if (plans.length === 0) return { written: 0 };

    const boundaries = await findBoundaries(plans, times, safeHead);
    const today = utcDate(Math.floor(now().getTime() / 1000));
    let written = 0;
    await forEachLimit(plans, concurrency, async (plan) => {
      if (options.signal?.aborted) return;
      // Read the result first: `written += await …` would add to a stale value of `written`.
      const n = await processProduct(plan, boundaries, times, today);
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

  /** Which days the product lacks, from its deployment day to `lastDay`. */
  async function planProduct(
    product: Product,
    deployedBlock: bigint,
    times: BlockTimes,
    lastDay: string,
  ): Promise<ProductPlan> {
    const engine = product.engineAddress!;
    const firstDay = utcDate(await times.timestamp(deployedBlock));
    const plan: ProductPlan = { product, engine, deployedBlock, days: [], existing: new Map() };
    if (firstDay > lastDay) return plan;
    // Final rows only: a provisional or legacy row neither covers its day nor is a previous day.
    const { count, latestDate } = await snapshots.coverage(product.id);
    if (latestDate === null) {
      plan.days = dayRange(firstDay, lastDay);
    } else if (count === daysBetween(firstDay, latestDate) + 1) {
      // The usual case: no holes, so only the days after the newest row are missing.
      const latest = await snapshots.latestFinal(product.id);
      if (latest) plan.existing.set(latest.date, latest);
      plan.days = dayRange(addDays(latestDate, 1), lastDay);
    } else {
      // Holes (rows deleted by hand, say): fill every missing day, each against its previous day.
      for (const row of await snapshots.listRange(product.id, firstDay, lastDay)) {
        if (isFinal(row)) plan.existing.set(row.date, row);
      }
      plan.days = dayRange(firstDay, lastDay).filter((d) => !plan.existing.has(d));
    }
    return plan;
  }

  /**
   * The boundary block of every day some product lacks, shared by all products (one search per
   * day per run, not per product). Days are searched oldest first, each from the previous answer,
   * and a first probe at the previous day's block count (doubled) usually brackets the day, so
   * the search covers about one day of blocks.
   */
  async function findBoundaries(
    plans: ProductPlan[],
    times: BlockTimes,
    safeHead: bigint,
  ): Promise<Map<string, bigint>> {
    const days = [...new Set(plans.flatMap((p) => p.days))].sort();
    // A valid lower bound for the oldest day: every plan's hint is a block before the end of its
    // first missing day (its previous row's block, or its deployment block on its first day).
    let lo = plans
      .map((p) => {
        const prev = p.existing.get(addDays(p.days[0]!, -1));
        return prev ? prev.blockNumber : p.deployedBlock;
      })
      .reduce(minBig);
    const result = new Map<string, bigint>();
    let perDay = 0n;
    let prevDay: string | undefined;
    for (const day of days) {
      const target = dayStartSeconds(day) + DAY_SECONDS;
      let hi = safeHead;
      if (perDay > 0n && prevDay) {
        const guess = lo + 2n * perDay * BigInt(daysBetween(prevDay, day)) + 1n;
        if (guess < hi) {
          if ((await times.timestamp(guess)) >= target) hi = guess;
          else lo = guess;
        }
      }
      const block = await lastBlockBefore(times, target, lo, hi);
      if (block === null) throw new Error(`no block before ${day} ends at or after block ${lo}`);
      if (prevDay !== undefined) perDay = block - (result.get(prevDay) ?? block);
      if (perDay < 1n) perDay = 1n;
      result.set(day, block);
      lo = block;
      prevDay = day;
    }
    return result;
  }

  /** Reads, computes and stores the product's missing days; returns the rows inserted. */
  async function processProduct(
    plan: ProductPlan,
    boundaries: Map<string, bigint>,
    times: BlockTimes,
    today: string,
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
      Promise.all(plan.days.map((day) => readBoundary(product, engine, blockOf(day), times))),
      readFlows(
        engine,
        plan.days.map((day) => ({ day, after: fromAfter(day), through: blockOf(day) })),
      ),
    ]);

    const rows: Snapshot[] = [];
    const alerts: { row: Snapshot; alert: ReturnType<typeof dailyAlerts>[number] }[] = [];
    const computed = new Map<string, Snapshot>();
    for (const [i, day] of plan.days.entries()) {
      const prevDay = addDays(day, -1);
      const prev = computed.get(prevDay) ?? plan.existing.get(prevDay) ?? null;
      const row = computeSnapshot(product.id, day, reads[i]!, flows.get(day)!, prev);
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

  /** Underlying vault reads are shared by every engine on that vault: one read per block. */
  const underlyingCache = new Map<string, Promise<VaultTotals>>();
  function readUnderlying(vault: `0x${string}`, blockNumber: bigint): Promise<VaultTotals> {
    const key = `${vault}:${blockNumber}`;
    let p = underlyingCache.get(key);
    if (!p) {
      p = readVaultTotals(client, { vault, blockNumber });
      p.catch(() => underlyingCache.delete(key));
      // Bounded: a backfill touches a few hundred blocks per vault; a daily run a handful.
      if (underlyingCache.size > 10_000) underlyingCache.clear();
      underlyingCache.set(key, p);
    }
    return p;
  }

  async function readBoundary(
    product: Product,
    engine: `0x${string}`,
    blockNumber: bigint,
    times: BlockTimes,
  ): Promise<BoundaryReads> {
    const [timestamp, engineFigures, pending, vaultTotals] = await Promise.all([
      times.timestamp(blockNumber),
      readEngineFigures(client, { engine, blockNumber }),
      readPendingFees(client, { engine, blockNumber }),
      readUnderlying(product.underlyingVaultAddress, blockNumber),
    ]);
    return {
      blockNumber,
      blockTimestamp: new Date(timestamp * 1000),
      ...engineFigures,
      ...pending,
      underlyingAssets: vaultTotals.totalAssets,
      underlyingSupply: vaultTotals.totalSupply,
    };
  }

  /**
   * Sums of Deposit.assets and Withdraw.assets of the engine per day, over blocks (after, through].
   * One eth_getLogs sweep over the whole span, in ranges within the chain's block range limit.
   * (An async exit's assets leave at the claim, which emits Withdraw; RedeemRequested moves none.)
   */
  async function readFlows(
    engine: `0x${string}`,
    spans: { day: string; after: bigint; through: bigint }[],
  ): Promise<Map<string, DayFlows>> {
    const result = new Map<string, DayFlows>();
    for (const s of spans) result.set(s.day, { deposits: 0n, withdrawals: 0n });
    if (spans.length === 0) return result;
    const from = spans.map((s) => s.after + 1n).reduce(minBig);
    const to = spans.map((s) => s.through).reduce(maxBig);
    const limit = BigInt(Math.max(1, chain.blockRangeLimit));
    const ranges: [bigint, bigint][] = [];
    for (let start = from; start <= to; start += limit) {
      ranges.push([start, minBig(start + limit - 1n, to)]);
    }
    const events = [depositEvent, withdrawEvent] as const satisfies readonly AbiEvent[];
    const batches = await Promise.all(
      ranges.map(([fromBlock, toBlock]) =>
        client.getLogs({ address: engine, events, fromBlock, toBlock, strict: true }),
      ),
    );
    for (const log of batches.flat()) {
      if (log.blockNumber === null) continue;
      const span = spans.find((s) => log.blockNumber! > s.after && log.blockNumber! <= s.through);
      if (!span) continue; // a day that already has its row
      const f = result.get(span.day)!;
      if (log.eventName === 'Deposit') f.deposits += log.args.assets;
      else f.withdrawals += log.args.assets;
    }
    return result;
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

function minBig(a: bigint, b: bigint): bigint {
  if (a < b) return a;
  return b;
}

function maxBig(a: bigint, b: bigint): bigint {
  if (a > b) return a;
  return b;
}

function dayRange(from: string, to: string): string[] {
  const days: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) days.push(d);
  return days;
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
