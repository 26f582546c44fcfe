/**
 * The realised APYs (issue #35) over the demo's 200 days of history (seed `demo`, 200 days: what
 * `yield-service start` simulates), on PGlite and PostgreSQL. The metrics processor writes every
 * day; each row's 7- and 30-day figures are then checked against an independent computation from
 * raw chain reads, the same method as the daily figure's reconciliation (test/sync/metrics.test.ts):
 * the pool's activeAssets / (activeSupply + pendingFeeShares) and the underlying vault's
 * totalAssets / totalSupply read at the two boundary blocks, the ratio raised to 365/N with
 * decimal.js (not src/money), 6 places half away from zero. A window without its first day is null.
 */
import { Decimal } from 'decimal.js';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../../src/chain/client.ts';
import { yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import type { Product } from '../../src/db/products.ts';
import { createSnapshotsRepo, type Snapshot } from '../../src/db/snapshots.ts';
import { createLogger } from '../../src/logger.ts';
import { addDays } from '../../src/sync/day-boundary.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { type LocalHistory, provisionEngines, startHistory } from './metrics-helpers.ts';

const DAYS = 200;
const SLUGS = [
  'acme-live-usdc-core',
  'acme-live-usdc-flex',
  'acme-live-usdc-boost',
  'acme-live-usdc-legacy',
];

let history: LocalHistory;
beforeAll(async () => {
  history = await startHistory('demo', DAYS);
}, 300_000);
afterAll(async () => {
  await history?.anvil.stop();
});

/** ((a1/s1)/(a0/s0))^(365/days) − 1 with decimal.js, 6 places half away from zero. */
function referenceApy(a0: bigint, s0: bigint, a1: bigint, s1: bigint, days: number): string | null {
  if (a0 === 0n || s0 === 0n || a1 === 0n || s1 === 0n) return null;
  const D = Decimal.clone({ precision: 120 });
  const ratio = new D(a1.toString())
    .div(s1.toString())
    .div(new D(a0.toString()).div(s0.toString()));
  const s = ratio.pow(new D(365).div(days)).minus(1).toFixed(6, Decimal.ROUND_HALF_UP);
  return s === '-0.000000' ? '0.000000' : s;
}

describe.each(storageEngines())('realised APYs over the demo history on %s', (engine) => {
  let test: TestDatabase;
  let products: Product[];
  beforeAll(async () => {
    test = await freshDatabase(engine);
    products = await provisionEngines(
      test.db,
      history.deployment,
      SLUGS.map((s) => history.deployment.engines[s]!),
    );
    await createMetricsProcessor({
      db: test.db,
      logger: createLogger('silent'),
      chain: history.chain,
      client: createChainClient(history.chain),
      now: () => new Date((history.deployment.historyEndTimestamp + 3600) * 1000),
    }).runOnce();
  }, 600_000);
  afterAll(async () => {
    await test?.drop();
  });

  it('reconcile with raw chain reads at the window boundaries, null until the window has data', async () => {
    const client = createChainClient(
      endpointOf(history.anvil.rpcUrl, history.chain.chainId),
      LOCAL_NODE_CLIENT,
    );
    const repo = createSnapshotsRepo(test.db);
    let checked = 0;
    let nonZero = 0;
    for (const p of products) {
      const engineAddress = p.engineAddress as Address;
      const rows = await repo.listRange(p.id, '2000-01-01', '2100-01-01');
      expect(rows.length).toBeGreaterThan(DAYS);
      const byDate = new Map(rows.map((r) => [r.date, r]));
      // Raw reads per boundary block, each read once.
      const reads = new Map<
        bigint,
        Promise<{ pool: [bigint, bigint]; underlying: [bigint, bigint] }>
      >();
      const at = (b: bigint) => {
        let r = reads.get(b);
        if (!r) {
          const read = (fn: 'activeAssets' | 'activeSupply' | 'pendingFeeShares') =>
            client.readContract({
              address: engineAddress,
              abi: yieldEngineAbi,
              functionName: fn,
              blockNumber: b,
            });
          const vault = (fn: 'totalAssets' | 'totalSupply') =>
            client.readContract({
              address: p.underlyingVaultAddress,
              abi: yieldVaultAbi,
              functionName: fn,
              blockNumber: b,
            });
          r = Promise.all([
            read('activeAssets'),
            read('activeSupply'),
            read('pendingFeeShares'),
            vault('totalAssets'),
            vault('totalSupply'),
          ]).then(([assets, supply, fees, ua, us]) => ({
            pool: [assets, supply + fees] as [bigint, bigint],
            underlying: [ua, us] as [bigint, bigint],
          }));
          reads.set(b, r);
        }
        return r;
      };
      for (const row of rows) {
        for (const days of [7, 30] as const) {
          const start: Snapshot | undefined = byDate.get(addDays(row.date, -days));
          const net = days === 7 ? row.netApy7d : row.netApy30d;
          const underlying = days === 7 ? row.underlyingApy7d : row.underlyingApy30d;
          if (!start) {
            expect(net, `${p.slug} ${row.date} ${days}d`).toBeNull();
            expect(underlying).toBeNull();
            continue;
          }
          const [a, b] = await Promise.all([at(start.blockNumber), at(row.blockNumber)]);
          expect(net, `${p.slug} ${row.date} net ${days}d`).toBe(
            referenceApy(a.pool[0], a.pool[1], b.pool[0], b.pool[1], days),
          );
          expect(underlying, `${p.slug} ${row.date} underlying ${days}d`).toBe(
            referenceApy(a.underlying[0], a.underlying[1], b.underlying[0], b.underlying[1], days),
          );
          checked++;
          if (net !== null && net !== '0.000000') nonZero++;
        }
      }
      // The first days have no window; every later day has one (whose figure is null only where
      // the reference is: an engine still empty at the window's first boundary).
      const first = rows[0]!.date;
      const windowed = (n: number) => rows.filter((r) => byDate.has(addDays(r.date, -n))).length;
      expect(windowed(7)).toBe(rows.filter((r) => r.date >= addDays(first, 7)).length);
      expect(windowed(30)).toBe(rows.filter((r) => r.date >= addDays(first, 30)).length);
    }
    expect(checked).toBeGreaterThan(4 * (2 * DAYS - 40));
    expect(nonZero).toBeGreaterThan(checked / 2);
  }, 600_000);

  it('serves them: latest_metrics, apy-history rows, and yield-calc from a chosen window', async () => {
    const repo = createSnapshotsRepo(test.db);
    const product = products.find((p) => p.status === 'active')!;
    const { key } = await createApiKeysRepo(test.db).create(product.partnerId, product.environment);
    const last = (await repo.listRange(product.id, '2000-01-01', '2100-01-01')).at(-1)!;
    expect(last.netApy7d).not.toBeNull();
    expect(last.netApy30d).not.toBeNull();
    const app = await buildTestApp({
      db: test.db,
      now: () => new Date((history.deployment.historyEndTimestamp + 3600) * 1000),
    });
    try {
      const get = async (url: string) => {
        const res = await app.inject({ url, headers: { 'x-api-key': key } });
        expect(res.statusCode, res.body).toBe(200);
        return res.json().data;
      };
      const detail = await get(`/api/partner/products/${product.slug}`);
      expect(detail.latest_metrics).toMatchObject({
        as_of_date: last.date,
        net_apy_7d: last.netApy7d,
        net_apy_30d: last.netApy30d,
        underlying_apy_7d: last.underlyingApy7d,
        underlying_apy_30d: last.underlyingApy30d,
      });
      const rows = await get(`/api/partner/products/${product.slug}/apy-history?days=30`);
      expect(rows[0]).toMatchObject({ date: last.date, net_apy_7d: last.netApy7d });
      const daily = await get(`/api/partner/products/${product.slug}/yield-calc?amount=1000`);
      expect(daily).toMatchObject({ net_apy_for_user: last.netApyForUser, apy_window: '1d' });
      for (const [w, apy] of [
        ['7d', last.netApy7d],
        ['30d', last.netApy30d],
      ] as const) {
        const p = await get(
          `/api/partner/products/${product.slug}/yield-calc?amount=1000&apy_window=${w}`,
        );
        expect(p).toMatchObject({ net_apy_for_user: apy, apy_window: w, apy_basis: 'engine' });
      }
    } finally {
      await app.close();
    }
  });

  it('smooths the daily figure: the 30-day figure moves less from day to day than the daily one', async () => {
    const repo = createSnapshotsRepo(test.db);
    const rows = (await repo.listRange(products[0]!.id, '2000-01-01', '2100-01-01')).filter(
      (r) => r.netApy30d !== null && r.netApyForUser !== null,
    );
    const swing = (values: string[]) =>
      values
        .slice(1)
        .reduce((s, v, i) => s.plus(new Decimal(v).minus(values[i]!).abs()), new Decimal(0));
    const daily = swing(rows.map((r) => r.netApyForUser!));
    const monthly = swing(rows.map((r) => r.netApy30d!));
    expect(monthly.lt(daily)).toBe(true);
  });
});
