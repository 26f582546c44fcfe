/**
 * The daily metrics processor on a 30-day simulated chain (sync and async engines, a pause, a
 * deprecation, an upstream loss), on PGlite and PostgreSQL. Every stored figure is checked against
 * an independent computation from raw chain reads: other engine functions than the processor uses
 * (totalSupplyAfterFees instead of accountingSnapshot), logs decoded here, FeesAccrued sums for the
 * fee counters, and APYs with decimal.js instead of src/money. Also: reruns change nothing, a
 * backfill in two steps equals one in one step, a deleted day is refilled, and the repo's queries.
 */
import { Decimal } from 'decimal.js';
import { type Address, decodeEventLog } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../../src/chain/client.ts';
import { yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
import type { Database } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import type { Product } from '../../src/db/products.ts';
import { createSnapshotReads } from '../../src/db/snapshot-reads.ts';
import { createSnapshotsRepo, type Snapshot } from '../../src/db/snapshots.ts';
import { createLogger } from '../../src/logger.ts';
import { readProvisionalSnapshot } from '../../src/sync/metrics/provisional.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { startRpcProxy } from './helpers-indexer.ts';
import { type LocalHistory, provisionEngines, startHistory } from './metrics-helpers.ts';

const DAYS = 30;
const SLUGS = [
  'acme-live-usdc-core',
  'acme-live-usdc-flex',
  'acme-live-usdc-boost',
  'acme-live-usdc-legacy',
];

let history: LocalHistory;
beforeAll(async () => {
  history = await startHistory('metrics-suite', DAYS);
}, 120_000);
afterAll(async () => {
  await history?.anvil.stop();
});

const isoDay = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);
/** One hour into the day after the history: yesterday is the last simulated day. */
const endNow = () => new Date((history.deployment.historyEndTimestamp + 3600) * 1000);

function processor(db: Database, now: () => Date = endNow, alertWindowDays?: number) {
  return createMetricsProcessor({
    db,
    logger: createLogger('silent'),
    chain: history.chain,
    client: createChainClient(history.chain),
    now,
    ...(alertWindowDays === undefined ? {} : { alertWindowDays }),
  });
}

async function setup(db: Database): Promise<Product[]> {
  const engines = SLUGS.map((s) => history.deployment.engines[s]!);
  return provisionEngines(db, history.deployment, engines);
}

/** All rows, keyed by slug and without created_at: comparable across databases. */
async function dump(db: Database): Promise<string[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT p.slug, s.* FROM daily_snapshots s JOIN products p ON p.id = s.product_id
     ORDER BY p.slug, s.date`,
  );
  return rows.map((r) => {
    const { created_at: _c, product_id: _p, ...rest } = r;
    return JSON.stringify(rest, (_k, v) => (v instanceof Date ? v.toISOString() : v));
  });
}

/** The reference APY: ((a1/s1)/(a0/s0))^365 − 1 with decimal.js, 6 places half away from zero. */
function referenceApy(a0: bigint, s0: bigint, a1: bigint, s1: bigint): string | null {
  if (a0 === 0n || s0 === 0n || a1 === 0n || s1 === 0n) return null;
  const D = Decimal.clone({ precision: 120 });
  const ratio = new D(a1.toString())
    .div(s1.toString())
    .div(new D(a0.toString()).div(s0.toString()));
  const s = ratio.pow(365).minus(1).toFixed(6, Decimal.ROUND_HALF_UP);
  return s === '-0.000000' ? '0.000000' : s;
}

describe.each(storageEngines())('daily metrics on %s', (engine) => {
  let test: TestDatabase;
  let products: Product[];
  beforeAll(async () => {
    test = await freshDatabase(engine);
    products = await setup(test.db);
  });
  afterAll(async () => {
    await test?.drop();
  });

  it('backfills every day from deployment to yesterday, once', async () => {
    const t0 = performance.now();
    const { written } = await processor(test.db).runOnce();
    const seconds = (performance.now() - t0) / 1000;
    const d = history.deployment;
    const firstDay = isoDay(d.genesisTimestamp); // engines are deployed a minute after genesis
    const lastDay = isoDay(d.historyEndTimestamp - 1);
    const expectedDays = DAYS + 1; // the deployment day (genesis at 23:00) plus the history
    expect(written).toBe(products.length * expectedDays);
    const repo = createSnapshotsRepo(test.db);
    for (const p of products) {
      const rows = await repo.listRange(p.id, '2000-01-01', '2100-01-01');
      expect(rows.map((r) => r.date)[0]).toBe(firstDay);
      expect(rows.at(-1)?.date).toBe(lastDay);
      expect(rows).toHaveLength(expectedDays);
    }
    expect(seconds).toBeLessThan(30); // generous; the benchmark prints the real figure
  });

  it('matches an independent computation from raw chain reads', async () => {
    const client = createChainClient(
      endpointOf(history.anvil.rpcUrl, history.chain.chainId),
      LOCAL_NODE_CLIENT,
    );
    const repo = createSnapshotsRepo(test.db);
    const followed = { total: 0, close: 0 };
    for (const p of products) {
      const engineAddress = p.engineAddress as Address;
      const rows = await repo.listRange(p.id, '2000-01-01', '2100-01-01');
      const last = rows.at(-1)!;
      const logs = (
        await client.getLogs({ address: engineAddress, fromBlock: 0n, toBlock: last.blockNumber })
      ).map((l) => ({
        block: l.blockNumber,
        ev: decodeEventLog({ abi: yieldEngineAbi, data: l.data, topics: l.topics }),
      }));
      let prev: Snapshot | undefined;
      for (const row of rows) {
        const b = row.blockNumber;
        // The boundary: last block before the next 00:00 UTC.
        const next = Date.parse(`${row.date}T00:00:00Z`) / 1000 + 86_400;
        const [blk, after] = await Promise.all([
          client.getBlock({ blockNumber: b }),
          client.getBlock({ blockNumber: b + 1n }),
        ]);
        expect(Number(blk.timestamp)).toBeLessThan(next);
        expect(Number(after.timestamp)).toBeGreaterThanOrEqual(next);
        expect(row.blockTimestamp.getTime()).toBe(Number(blk.timestamp) * 1000);

        const read = <
          F extends
            | 'totalAssets'
            | 'totalSupplyAfterFees'
            | 'activeAssets'
            | 'activeSupply'
            | 'pendingFeeShares',
        >(
          fn: F,
        ) =>
          client.readContract({
            address: engineAddress,
            abi: yieldEngineAbi,
            functionName: fn,
            blockNumber: b,
          });
        const [assets, supplyAfterFees, uAssets, uSupply, serviceTotal, partnerTotal] =
          await Promise.all([
            read('totalAssets'),
            read('totalSupplyAfterFees'),
            client.readContract({
              address: p.underlyingVaultAddress,
              abi: yieldVaultAbi,
              functionName: 'totalAssets',
              blockNumber: b,
            }),
            client.readContract({
              address: p.underlyingVaultAddress,
              abi: yieldVaultAbi,
              functionName: 'totalSupply',
              blockNumber: b,
            }),
            client.readContract({
              address: engineAddress,
              abi: yieldEngineAbi,
              functionName: 'serviceFeeAssetsTotal',
              blockNumber: b,
            }),
            client.readContract({
              address: engineAddress,
              abi: yieldEngineAbi,
              functionName: 'partnerFeeAssetsTotal',
              blockNumber: b,
            }),
          ]);
        expect(row.engineTotalAssets).toBe(assets);
        expect(row.engineTotalSupply).toBe(supplyAfterFees);
        // The active pool (issue #28): what a holder who stays in the pool holds a share of.
        const [poolAssets, activeSupply, feeShares] = await Promise.all([
          read('activeAssets'),
          read('activeSupply'),
          read('pendingFeeShares'),
        ]);
        const poolSupply = activeSupply + feeShares;
        expect(row.enginePoolAssets).toBe(poolAssets);
        expect(row.enginePoolSupply).toBe(poolSupply);
        if (p.vaultKind !== 'async')
          expect([poolAssets, poolSupply]).toEqual([assets, supplyAfterFees]);
        expect(row.underlyingTotalAssets).toBe(uAssets);
        expect(row.underlyingTotalSupply).toBe(uSupply);

        // Fee counters equal the sums of the FeesAccrued logs up to the boundary.
        let service = 0n;
        let partner = 0n;
        let deposits = 0n;
        let withdrawals = 0n;
        const from = prev ? prev.blockNumber : 0n;
        for (const { block, ev } of logs) {
          if (block === null || block > b) continue;
          if (ev.eventName === 'FeesAccrued') {
            service += ev.args.serviceAssets;
            partner += ev.args.partnerAssets;
          }
          if (block <= from) continue;
          if (ev.eventName === 'Deposit') deposits += ev.args.assets;
          if (ev.eventName === 'Withdraw') withdrawals += ev.args.assets;
        }
        expect(serviceTotal).toBe(service);
        expect(partnerTotal).toBe(partner);
        expect(row.serviceFeeAssetsTotal).toBe(service);
        expect(row.partnerFeeAssetsTotal).toBe(partner);
        expect(row.depositsAssets).toBe(deposits);
        expect(row.withdrawalsAssets).toBe(withdrawals);

        // Pending fees: the engine's view at the boundary, and (independently) what an accrual
        // at the boundary charges: the accountingSnapshot's pending fee shares valued at the
        // price after minting them, split service/partner by their bps, remainder to the partner.
        const [servicePending, partnerPending] = await client.readContract({
          address: engineAddress,
          abi: yieldEngineAbi,
          functionName: 'pendingFees',
          blockNumber: b,
        });
        expect(row.serviceFeePending).toBe(servicePending);
        expect(row.partnerFeePending).toBe(partnerPending);
        expect(servicePending).toBe(
          ((servicePending + partnerPending) * BigInt(p.serviceFeeBps)) /
            BigInt(p.serviceFeeBps + p.partnerFeeBps),
        );

        // Day figures: the change of earned = minted + pending (DECISIONS, "Fee figures").
        const earnedPartner = partner + partnerPending;
        const earnedService = service + servicePending;
        const prevPartner = prev ? prev.partnerFeeAssetsTotal + prev.partnerFeePending! : 0n;
        const prevService = prev ? prev.serviceFeeAssetsTotal + prev.serviceFeePending! : 0n;
        expect(row.dailyPartnerFee).toBe(earnedPartner - prevPartner);
        expect(row.dailyServiceFee).toBe(earnedService - prevService);
        if (prev && prev.partnerFeePending! > 0n && partnerPending > 0n) {
          // Above the high-water mark at both ends: the day's fee is its share of the day's yield
          // (the old minted-only figure was 0 on a quiet day and up to twice that the next day).
          followed.total++;
          const expected = new Decimal(row.dailyYieldAssets!.toString())
            .mul(p.partnerFeeBps)
            .div(10_000);
          const diff = expected.minus(row.dailyPartnerFee!.toString()).abs();
          if (diff.lte(expected.abs().mul(0.02).plus(2))) followed.close++;
        }
        expect(row.dailyYieldAssets).toBe(
          assets - (prev?.engineTotalAssets ?? 0n) - deposits + withdrawals,
        );
        expect(row.underlyingApy).toBe(
          prev
            ? referenceApy(prev.underlyingTotalAssets, prev.underlyingTotalSupply, uAssets, uSupply)
            : null,
        );
        expect(row.netApyForUser).toBe(
          prev
            ? referenceApy(prev.enginePoolAssets!, prev.enginePoolSupply!, poolAssets, poolSupply)
            : null,
        );
        prev = row;
      }
      // The daily fees reconcile with the cumulative earned figure to the base unit.
      const sum = rows.reduce((s, r) => s + (r.dailyPartnerFee ?? 0n), 0n);
      expect(sum).toBe(last.partnerFeeAssetsTotal + last.partnerFeePending!);
      const serviceSum = rows.reduce((s, r) => s + (r.dailyServiceFee ?? 0n), 0n);
      expect(serviceSum).toBe(last.serviceFeeAssetsTotal + last.serviceFeePending!);
      expect(last.partnerFeeAssetsTotal).toBeGreaterThan(0n);
    }
    // The daily fee follows the yield: on (nearly) every day above the mark it is the partner's
    // share of that day's yield. Days with deposits or withdrawals mid-day differ slightly.
    expect(followed.total).toBeGreaterThan(20);
    expect(followed.close / followed.total, JSON.stringify(followed)).toBeGreaterThan(0.9);
  });

  it('stores alerts only for the last two days, exactly where the thresholds are crossed', async () => {
    const events = await createEventsRepo(test.db).list();
    const today = isoDay(history.deployment.historyEndTimestamp);
    const window = new Set(
      [1, 2].map((n) => isoDay(Date.parse(`${today}T00:00:00Z`) / 1000 - n * 86_400)),
    );
    const repo = createSnapshotsRepo(test.db);
    const expected: string[] = [];
    for (const p of products) {
      const rows = await repo.listRange(p.id, '2000-01-01', '2100-01-01');
      for (const [i, row] of rows.entries()) {
        const prev = rows[i - 1];
        if (!prev || !window.has(row.date)) continue;
        const moved = (a: Decimal, b: Decimal, pct: number) =>
          !a.isZero() && b.minus(a).abs().div(a.abs()).times(100).greaterThan(pct);
        if (
          prev.netApyForUser !== null &&
          row.netApyForUser !== null &&
          moved(new Decimal(prev.netApyForUser), new Decimal(row.netApyForUser), 10)
        ) {
          expected.push(`apy_change:${p.slug}:${row.date}`);
        }
        if (
          moved(
            new Decimal(prev.engineTotalAssets.toString()),
            new Decimal(row.engineTotalAssets.toString()),
            20,
          )
        ) {
          expected.push(`tvl_alert:${p.slug}:${row.date}`);
        }
      }
    }
    expect(events.map((e) => e.dedupeKey).sort()).toEqual(expected.sort());
    for (const e of events) {
      const payload = JSON.parse(e.payload) as Record<string, unknown>;
      expect(window.has(payload.date as string)).toBe(true);
      expect(e.occurredAt.toISOString().slice(0, 10)).toBe(payload.date);
    }
  });

  it('changes nothing when rerun, and refills a deleted day identically', async () => {
    const before = await dump(test.db);
    const eventsBefore = (await createEventsRepo(test.db).list()).length;
    expect((await processor(test.db).runOnce()).written).toBe(0);
    expect(await dump(test.db)).toEqual(before);

    const p = products[1]!; // the async engine
    await test.db.query(
      `DELETE FROM daily_snapshots WHERE product_id = $1 AND date = (
         SELECT min(date) + 10 FROM daily_snapshots WHERE product_id = $1)`,
      [p.id],
    );
    expect((await processor(test.db).runOnce()).written).toBe(1);
    expect(await dump(test.db)).toEqual(before);
    expect((await createEventsRepo(test.db).list()).length).toBe(eventsBefore);

    // Rows written before migration 0021 (no pending fees, minted-only daily fees) are
    // recomputed from the chain and replaced, alerts untouched.
    await test.db.query(
      `UPDATE daily_snapshots SET partner_fee_pending = NULL, service_fee_pending = NULL,
         daily_partner_fee = daily_partner_fee + 1 WHERE product_id = $1`,
      [p.id],
    );
    const legacyDays = before.filter((r) => r.includes(`"slug":"${p.slug}"`)).length;
    expect((await processor(test.db).runOnce()).written).toBe(legacyDays);
    expect(await dump(test.db)).toEqual(before);
    expect((await createEventsRepo(test.db).list()).length).toBe(eventsBefore);
  });

  it('gives the same rows when the backfill runs in two steps on another database', async () => {
    const other = await freshDatabase(engine);
    try {
      await setup(other.db);
      const mid = new Date((history.deployment.historyStartTimestamp + 12 * 86_400 + 5) * 1000);
      const first = await processor(other.db, () => mid).runOnce();
      expect(first.written).toBe(products.length * 13); // deployment day + 12 history days
      await processor(other.db).runOnce();
      expect(await dump(other.db)).toEqual(await dump(test.db));
    } finally {
      await other.drop();
    }
  });

  it('gives the same rows through a provider that refuses wide log ranges', async () => {
    // A real HTTP JSON-RPC proxy in front of anvil that refuses eth_getLogs over more than a fifth
    // of the history, in a hosted provider's words; the chain's own limit would allow it all.
    const proxy = await startRpcProxy(history.anvil.rpcUrl);
    const other = await freshDatabase(engine);
    try {
      await setup(other.db);
      const maxSpan = Math.ceil(history.deployment.historyEndBlock / 5);
      proxy.setMaxLogSpan(maxSpan);
      const chain = { ...history.chain, rpcUrls: [proxy.url], blockRangeLimit: 1_000_000 };
      const { written } = await createMetricsProcessor({
        db: other.db,
        logger: createLogger('silent'),
        chain,
        client: createChainClient(chain),
        now: endNow,
      }).runOnce();
      expect(written).toBe(products.length * (DAYS + 1));
      expect(proxy.spans.some((s) => s > maxSpan)).toBe(true); // it asked wide and was refused
      expect(proxy.spans.some((s) => s <= maxSpan)).toBe(true); // then split until answered
      expect(await dump(other.db)).toEqual(await dump(test.db));
    } finally {
      await other.drop();
      await proxy.close();
    }
  });

  it('replaces the provisional deployment-day row with the real one, and never a real row', async () => {
    const other = await freshDatabase(engine);
    try {
      const ps = await setup(other.db);
      const client = createChainClient(history.chain);
      const repo = createSnapshotsRepo(other.db);
      const reads = createSnapshotReads(other.db);
      const deployDay = isoDay(history.deployment.genesisTimestamp);
      // What the lifecycle writes at activation: the deployment day at the deployment block.
      for (const p of ps) {
        const block = await client.getBlock({ blockNumber: p.deployedBlock! });
        const row = await readProvisionalSnapshot(client, {
          productId: p.id,
          engine: p.engineAddress as Address,
          underlyingVault: p.underlyingVaultAddress,
          blockNumber: p.deployedBlock!,
          blockTimestamp: new Date(Number(block.timestamp) * 1000),
          totalFeeBps: p.serviceFeeBps + p.partnerFeeBps,
        });
        // The chain starts the evening before: the underlying has no finished day to estimate from.
        expect(row).toMatchObject({
          date: deployDay,
          provisional: true,
          netApyForUser: null,
          estimatedNetApy: null,
        });
        expect(await repo.insertProvisional(row)).toBe(true);
        expect(await repo.insertProvisional(row)).toBe(false); // once
      }
      const p0 = ps[0]!;
      expect((await reads.latestFor([p0.id])).get(p0.id)).toMatchObject({
        date: deployDay,
        underlyingApy: null,
        netApyForUser: null,
      });
      expect(await reads.apyHistory(p0.id, '2000-01-01', '2100-01-01')).toEqual([]);
      expect(await reads.feeStats(p0.id, '2000-01-01', '2100-01-01')).toEqual([]);

      // While the deployment day is open the processor writes nothing; the row stays.
      const sameDay = new Date((history.deployment.genesisTimestamp + 1800) * 1000);
      expect((await processor(other.db, () => sameDay).runOnce()).written).toBe(0);
      expect((await repo.latest(p0.id))?.provisional).toBe(true);

      // Once it closes, the real row replaces it: a provisional row covers no day and is no
      // previous day, so every row (and every APY after it) equals a run that never had one.
      const mid = new Date((history.deployment.historyStartTimestamp + 12 * 86_400 + 5) * 1000);
      expect((await processor(other.db, () => mid).runOnce()).written).toBe(ps.length * 13);
      const real = (await repo.listRange(p0.id, deployDay, deployDay))[0]!;
      expect(real.provisional).toBe(false);
      await processor(other.db).runOnce();
      expect(await dump(other.db)).toEqual(await dump(test.db));

      // A real row is never replaced: not by a provisional one, not by another real one.
      const before = await dump(other.db);
      expect(await repo.insertProvisional({ ...real, engineTotalAssets: 1n })).toBe(false);
      const changed = { ...real, engineTotalAssets: real.engineTotalAssets + 1n };
      expect((await repo.insertMany([changed])).size).toBe(0);
      expect((await processor(other.db).runOnce()).written).toBe(0);
      expect(await dump(other.db)).toEqual(before);
    } finally {
      await other.drop();
    }
  });

  it('serves latest, range and latest-n queries', async () => {
    const repo = createSnapshotsRepo(test.db);
    const p = products[0]!;
    const latest = await repo.latest(p.id);
    expect(latest?.date).toBe(isoDay(history.deployment.historyEndTimestamp - 1));
    const newest = await repo.listLatest(p.id, 5);
    expect(newest.map((r) => r.date)).toEqual(
      [0, 1, 2, 3, 4].map((n) => isoDay(history.deployment.historyEndTimestamp - 1 - n * 86_400)),
    );
    const from = newest[4]!.date;
    const to = newest[1]!.date;
    const range = await repo.listRange(p.id, from, to);
    expect(range.map((r) => r.date)).toEqual(
      newest
        .slice(1)
        .map((r) => r.date)
        .reverse(),
    );
    expect(await repo.latest('prd_unknown')).toBeUndefined();
    expect(latest?.netApyForUser).toMatch(/^-?\d+\.\d{6}$/);
  });
});
