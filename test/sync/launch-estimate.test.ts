/**
 * Launch-day pricing (#14) on a real anvil: a product deployed today over a vault with days of
 * history is priced at once on the underlying's estimate (its share price at two day boundaries,
 * the fees applied to the gain), labelled `apy_basis: "underlying_estimate"`, never null; the
 * engine's first closed day keeps the estimate; from its first full day of its own the figures are
 * the engine's (`engine`). A product whose underlying has no measured day at all gets
 * latest_metrics null and a 503 with Retry-After from yield-calc. References are computed here with
 * decimal.js from raw vault reads, independently of src/money.
 */
import { Decimal } from 'decimal.js';
import { type Address, encodeFunctionData, maxUint256 } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { testUSDAbi, yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';
import { createLogger } from '../../src/logger.ts';
import type { buildApp } from '../../src/server/app.ts';
import { localChainSettings } from '../../src/sync/chain-runtime.ts';
import { createLifecycle } from '../../src/sync/lifecycle.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import {
  type Fixture,
  mineBlock,
  PARTNER,
  SERVICE,
  send,
  setupFixture,
  USD,
  USERS,
} from '../chain/helpers.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { attachContractCheck } from '../helpers/contract.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const DAY = 86_400;
const logger = createLogger('silent');
const iso = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10);

/** Reference APYs of one underlying day from raw reads, with decimal.js (6 places, half up). */
async function referenceEstimate(
  fx: Fixture,
  vault: Address,
  fromBlock: bigint,
  toBlock: bigint,
  feeBps: number,
) {
  const read = (functionName: 'totalAssets' | 'totalSupply', blockNumber: bigint) =>
    fx.client.readContract({ address: vault, abi: yieldVaultAbi, functionName, blockNumber });
  const [a0, s0, a1, s1] = await Promise.all([
    read('totalAssets', fromBlock),
    read('totalSupply', fromBlock),
    read('totalAssets', toBlock),
    read('totalSupply', toBlock),
  ]);
  const D = Decimal.clone({ precision: 120 });
  const ratio = new D(a1.toString())
    .div(s1.toString())
    .div(new D(a0.toString()).div(s0.toString()));
  expect(ratio.gt(1)).toBe(true); // the vault earns: the fee applies to the gain
  const net = ratio
    .minus(1)
    .mul(new D(10_000 - feeBps).div(10_000))
    .plus(1);
  const apy = (r: Decimal) => r.pow(365).minus(1).toFixed(6, Decimal.ROUND_HALF_UP);
  return { underlying: apy(ratio), net: apy(net) };
}

describe.each(storageEngines())('launch-day pricing on %s', (engine) => {
  let fx: Fixture;
  /** 00:00 UTC of the first whole day after the fixture's genesis. */
  let day0: number;
  /** Blocks mined at noon of day0 + 1 and day0 + 2 (the boundaries of those days). */
  let noon: bigint[] = [];

  async function startChain() {
    // A chain per storage engine: each run moves its clock through the same days.
    fx = await setupFixture();
    noon = [];
    const user = USERS[0]!;
    // The sync vault gets holders, then lives two whole days before any engine exists.
    await send(
      fx,
      user,
      fx.asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'approve',
        args: [fx.syncVault, maxUint256],
      }),
    );
    await send(
      fx,
      user,
      fx.syncVault,
      encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'deposit',
        args: [1_000_000n * USD, user],
      }),
    );
    day0 = Math.ceil(fx.now / DAY) * DAY;
    for (const d of [1, 2]) {
      fx.now = day0 + d * DAY + 12 * 3600;
      await mineBlock(fx);
      noon.push((await fx.client.getBlockNumber({ cacheTime: 0 })) as bigint);
    }
    fx.now = day0 + 3 * DAY + 9 * 3600; // the launch day, 09:00 UTC
  }

  let t: TestDatabase;
  let launch: Product;
  let young: Product;
  let key: string;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let contract: ReturnType<typeof attachContractCheck>;
  const chain = () => localChainSettings(fx.anvil.rpcUrl, fx.anvil.chainId);
  let clock = new Date();
  const get = (url: string) => app.inject({ url, headers: { 'x-api-key': key } });

  beforeAll(async () => {
    await startChain();
    t = await freshDatabase(engine);
    const partner = await createPartnersRepo(t.db).create(`Acme ${engine}`);
    const products = createProductsRepo(t.db);
    const base = {
      partnerId: partner.id,
      environment: 'live' as const,
      displayName: 'USDC Launch',
      riskLabel: 'low' as const,
      chainId: fx.anvil.chainId,
      vaultKind: 'sync' as const,
      engineName: 'Launch',
      engineSymbol: 'yL',
      assetAddress: fx.asset,
      assetSymbol: 'USDC',
      assetDecimals: 6,
      serviceFeeBps: 500,
      partnerFeeBps: 1000,
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
    };
    launch = await products.create({
      ...base,
      slug: `launch-${engine}`,
      underlyingVaultAddress: fx.syncVault,
    });
    // The async vault has no holder: no share price, so no day of its own can be measured.
    young = await products.create({
      ...base,
      slug: `young-${engine}`,
      underlyingVaultAddress: fx.asyncVault,
    });
    key = (await createApiKeysRepo(t.db).create(partner.id, 'live')).key;
    app = await buildTestApp({
      db: t.db,
      chains: [],
      readCache: { pollMs: 10 },
      now: () => clock,
    });
    contract = attachContractCheck(app);
    await app.ready();
  }, 120_000);
  afterAll(async () => {
    await fx?.stop();
    await app?.close();
    await t?.drop();
    contract?.assertClean();
  });

  it('prices a product launched today on the underlying estimate, never null', async () => {
    clock = new Date(fx.now * 1000);
    const lifecycle = createLifecycle({
      db: t.db,
      logger,
      chain: chain(),
      client: createChainClient(chain()),
      holder: `w-${engine}`,
      now: () => clock,
    });
    await lifecycle.tick(); // both deployments broadcast
    for (let i = 0; i < 3; i++) await mineBlock(fx);
    expect((await lifecycle.tick()).deployed.sort()).toEqual([launch.slug, young.slug].sort());

    // The provisional row's estimate: the underlying's last finished day before the launch
    // (noon blocks are the boundaries of day0+1 and day0+2), fees 15 %.
    const ref = await referenceEstimate(fx, fx.syncVault, noon[0]!, noon[1]!, 1500);
    await new Promise((r) => setTimeout(r, 50)); // the read cache's poll
    const product = (await get(`/api/partner/products/${launch.slug}`)).json().data;
    expect(product.status).toBe('active');
    expect(product.latest_metrics).toEqual({
      as_of_date: iso(fx.now),
      engine_total_assets: '0',
      underlying_apy: ref.underlying,
      net_apy_for_user: ref.net,
      apy_basis: 'underlying_estimate',
      // Realised APYs need a window of the engine's own days: none yet.
      net_apy_7d: null,
      net_apy_30d: null,
      underlying_apy_7d: null,
      underlying_apy_30d: null,
    });
    expect(Number(ref.net)).toBeLessThan(Number(ref.underlying));
    const calc = await get(`/api/partner/products/${launch.slug}/yield-calc?amount=1000`);
    expect(calc.statusCode).toBe(200);
    expect(calc.json().data).toMatchObject({
      principal: '1000',
      net_apy_for_user: ref.net,
      apy_basis: 'underlying_estimate',
    });
    // History lists only days of the engine's own: none yet.
    expect(
      (await get(`/api/partner/products/${launch.slug}/apy-history?days=7`)).json().data,
    ).toEqual([]);

    // No measured day on any basis: latest_metrics null, yield-calc 503 with Retry-After.
    const y = (await get(`/api/partner/products/${young.slug}`)).json().data;
    expect(y).toMatchObject({ status: 'active', latest_metrics: null });
    const no = await get(`/api/partner/products/${young.slug}/yield-calc?amount=1000`);
    expect(no.statusCode).toBe(503);
    expect(no.json().code).toBe('service_unavailable');
    // Until the current UTC day closes (wall clock), plus a minute for its snapshot.
    const retryAfter = Number(no.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(60);
    expect(retryAfter).toBeLessThanOrEqual(DAY + 60);
  });

  it('keeps the estimate for the first closed day, then serves the engine figures', async () => {
    launch = (await createProductsRepo(t.db).getById(launch.id))!;
    const engineAddress = launch.engineAddress as Address;
    const user = USERS[1]!;
    await send(
      fx,
      user,
      fx.asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'approve',
        args: [engineAddress, maxUint256],
      }),
    );
    await send(
      fx,
      user,
      engineAddress,
      encodeFunctionData({
        abi: yieldEngineAbi,
        functionName: 'deposit',
        args: [5_000n * USD, user],
      }),
    );
    const launchDay = Math.floor(fx.now / DAY) * DAY;
    fx.now = launchDay + 20 * 3600;
    await mineBlock(fx);
    const launchBoundary = await fx.client.getBlockNumber({ cacheTime: 0 });
    fx.now = launchDay + DAY + 12 * 3600;
    await mineBlock(fx);
    fx.now = launchDay + 2 * DAY + 600; // the day after: both days closed
    for (let i = 0; i < 3; i++) await mineBlock(fx);
    clock = new Date(fx.now * 1000);
    const metrics = createMetricsProcessor({
      db: t.db,
      logger,
      chain: chain(),
      client: createChainClient(chain()),
      now: () => clock,
    });
    expect((await metrics.runOnce()).written).toBe(4); // two days, two products

    // The launch day (the engine's first, no day of its own): the underlying's day itself.
    const rows = await t.db.query<{
      date: string;
      net_apy_for_user: string | null;
      estimated_underlying_apy: string | null;
      estimated_net_apy: string | null;
    }>(
      `SELECT date, net_apy_for_user, estimated_underlying_apy, estimated_net_apy
       FROM daily_snapshots WHERE product_id = $1 ORDER BY date`,
      [launch.id],
    );
    const ref = await referenceEstimate(fx, fx.syncVault, noon[1]!, launchBoundary, 1500);
    expect(rows.rows[0]).toEqual({
      date: iso(launchDay),
      net_apy_for_user: null,
      estimated_underlying_apy: ref.underlying,
      estimated_net_apy: ref.net,
    });
    // The next day is the engine's own: measured, no estimate.
    expect(rows.rows[1]).toMatchObject({
      date: iso(launchDay + DAY),
      net_apy_for_user: expect.stringMatching(/^0\.\d{6}$/),
      estimated_net_apy: null,
    });

    await new Promise((r) => setTimeout(r, 50));
    const latest = (await get(`/api/partner/products/${launch.slug}`)).json().data.latest_metrics;
    expect(latest).toMatchObject({
      as_of_date: iso(launchDay + DAY),
      net_apy_for_user: rows.rows[1]!.net_apy_for_user,
      apy_basis: 'engine',
    });
    const calc = (await get(`/api/partner/products/${launch.slug}/yield-calc?amount=1000`)).json();
    expect(calc.data).toMatchObject({
      net_apy_for_user: rows.rows[1]!.net_apy_for_user,
      apy_basis: 'engine',
    });
    const history = (await get(`/api/partner/products/${launch.slug}/apy-history?days=7`)).json();
    expect(history.data.map((r: { date: string }) => r.date)).toEqual([iso(launchDay + DAY)]);
  });
});
