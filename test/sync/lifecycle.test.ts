/**
 * The product lifecycle worker on a real anvil (blocks mined explicitly, so confirmation depth is
 * exact) and every storage engine: deployment once across a restart, status following the engine
 * and the upstream vault, vault_pause on entry and once per UTC day, operator deprecation.
 */
import {
  type Address,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  keccak256,
  parseTransaction,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { engineConstructorArgs } from '../../src/chain/deploy.ts';
import { yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
import { yieldEngineBytecode } from '../../src/chain/generated/YieldEngine.ts';
import { operatorWallet } from '../../src/chain/send-engine-call.ts';
import { createEventsRepo, dedupeKey } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductDeploysRepo } from '../../src/db/product-deploys.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';
import { createSnapshotReads } from '../../src/db/snapshot-reads.ts';
import { createSnapshotsRepo } from '../../src/db/snapshots.ts';
import { createLogger } from '../../src/logger.ts';
import { localChainSettings } from '../../src/sync/chain-runtime.ts';
import {
  applyProductFeeChange,
  cancelProductFeeChange,
  changeProductFees,
  showProductFees,
} from '../../src/sync/lifecycle/fee-commands.ts';
import { deprecateProduct } from '../../src/sync/lifecycle/operator-commands.ts';
import { createLifecycle } from '../../src/sync/lifecycle.ts';
import {
  type Fixture,
  mineBlock,
  OPERATOR,
  PARTNER,
  SERVICE,
  send,
  setupFixture,
} from '../chain/helpers.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const logger = createLogger((process.env.TEST_LOG_LEVEL ?? 'silent') as 'silent');
let fx: Fixture;
beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

const mine = async (n: number) => {
  for (let i = 0; i < n; i++) await mineBlock(fx);
};

describe.each(storageEngines())('product lifecycle on %s', (engine) => {
  let t: TestDatabase;
  let product: Product;
  let clock = new Date('2030-03-01T10:00:00Z');
  const slug = `core-${engine}`;
  const chain = () => localChainSettings(fx.anvil.rpcUrl, fx.anvil.chainId);
  const lifecycle = (holder = 'worker-1', log = logger) =>
    createLifecycle({
      db: t.db,
      logger: log,
      chain: chain(),
      client: createChainClient(chain()),
      holder,
      now: () => clock,
    });
  const vaultPauses = async () =>
    (await createEventsRepo(t.db).list({ eventType: 'vault_pause', productId: product.id })).map(
      (e) => e.dedupeKey,
    );
  const reload = async () => (product = (await createProductsRepo(t.db).getById(product.id))!);
  const operatorNonce = () => createChainClient(chain()).getTransactionCount({ address: OPERATOR });

  beforeAll(async () => {
    t = await freshDatabase(engine);
    const partner = await createPartnersRepo(t.db).create('Acme');
    product = await createProductsRepo(t.db).create({
      partnerId: partner.id,
      environment: 'test',
      slug,
      displayName: 'USDC Core',
      riskLabel: 'low',
      chainId: fx.anvil.chainId,
      vaultKind: 'sync',
      engineName: 'Core',
      engineSymbol: 'yC',
      underlyingVaultAddress: fx.syncVault,
      assetAddress: fx.asset,
      assetSymbol: 'USDC',
      assetDecimals: 6,
      serviceFeeBps: 500,
      partnerFeeBps: 1000,
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
    });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('deploys a pending product once, across a restart, and activates it at depth', async () => {
    const nonceBefore = await operatorNonce();
    const first = await lifecycle().tick();
    expect(first).toMatchObject({ leased: true, deployed: [] });
    const hash = (await reload()).deployTxHash;
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(product.status).toBe('pending_deploy');

    // Another worker cannot take the chain while the lease is held.
    expect((await lifecycle('worker-2').tick()).leased).toBe(false);

    // "Restart": a new instance finds the recorded transaction, still unmined, and only waits.
    const restarted = lifecycle();
    expect((await restarted.tick()).deployed).toEqual([]);
    await mine(1);
    expect((await restarted.tick()).deployed).toEqual([]); // 0 blocks on top: not at depth 2
    await mine(1);
    expect((await restarted.tick()).deployed).toEqual([]); // 1 block on top
    await mine(1);
    expect((await restarted.tick()).deployed).toEqual([slug]);

    await reload();
    expect(product.status).toBe('active');
    expect(product.deployTxHash).toBe(hash);
    expect(await operatorNonce()).toBe(nonceBefore + 1); // exactly one transaction: one engine
    const client = createChainClient(chain());
    const receipt = await client.getTransactionReceipt({ hash: hash! });
    const engineAddress = getAddress(receipt.contractAddress!);
    expect(product.engineAddress).toBe(engineAddress);
    expect(product.deployedBlock).toBe(receipt.blockNumber);
    expect(product.shareDecimals).toBe(12); // asset 6 + the engine's offset 6
    const block = await client.getBlock({ blockNumber: receipt.blockNumber });

    // Active with its first snapshot at once: provisional, at the deployment block (DECISIONS:
    // latest_metrics is null only while pending_deploy).
    const deployDay = new Date(Number(block.timestamp) * 1000).toISOString().slice(0, 10);
    const [uAssets, uSupply] = await Promise.all(
      (['totalAssets', 'totalSupply'] as const).map((functionName) =>
        client.readContract({
          address: fx.syncVault,
          abi: yieldVaultAbi,
          functionName,
          blockNumber: receipt.blockNumber,
        }),
      ),
    );
    const rows = await createSnapshotsRepo(t.db).listRange(product.id, '2000-01-01', '2100-01-01');
    expect(rows).toEqual([
      {
        productId: product.id,
        date: deployDay,
        blockNumber: receipt.blockNumber,
        blockTimestamp: new Date(Number(block.timestamp) * 1000),
        engineTotalAssets: 0n,
        engineTotalSupply: 0n,
        enginePoolAssets: 0n,
        enginePoolSupply: 0n,
        underlyingTotalAssets: uAssets,
        underlyingTotalSupply: uSupply,
        serviceFeeAssetsTotal: 0n,
        partnerFeeAssetsTotal: 0n,
        serviceFeePending: 0n,
        partnerFeePending: 0n,
        depositsAssets: 0n,
        withdrawalsAssets: 0n,
        underlyingApy: null,
        netApyForUser: null,
        dailyYieldAssets: null,
        dailyPartnerFee: null,
        dailyServiceFee: null,
        provisional: true,
        // The vault is minutes old: no day of the underlying to estimate from (launch-estimate.test).
        estimatedUnderlyingApy: null,
        estimatedNetApy: null,
        // Provisional rows are not checked against reorganisations (metrics/reorg-check.ts).
        blockHash: null,
        // No realised APYs: a provisional row has no window (migration 0043).
        netApy7d: null,
        netApy30d: null,
        underlyingApy7d: null,
        underlyingApy30d: null,
      },
    ]);
    // What the API reads: latest_metrics has it; apy-history and fee-stats do not.
    const reads = createSnapshotReads(t.db);
    expect((await reads.latestFor([product.id])).get(product.id)).toMatchObject({
      date: deployDay,
      engineTotalAssets: 0n,
      underlyingApy: null,
      netApyForUser: null,
    });
    expect(await reads.apyHistory(product.id, '2000-01-01', '2100-01-01')).toEqual([]);
    expect(await reads.feeStats(product.id, '2000-01-01', '2100-01-01')).toEqual([]);
    expect(await reads.latestNetApy(product.id)).toBeUndefined();

    await mine(1);
    await restarted.tick();
    const deployed = await createEventsRepo(t.db).list({ eventType: 'product.deployed' });
    expect(deployed).toHaveLength(1);
    expect(deployed[0]?.dedupeKey).toBe(dedupeKey.productDeployed(slug));
    expect(deployed[0]).toMatchObject({
      partnerId: product.partnerId,
      environment: 'test',
      productId: product.id,
    });
    expect(JSON.parse(deployed[0]!.payload)).toEqual({
      slug,
      chain_id: fx.anvil.chainId,
      engine_contract_address: engineAddress,
      underlying_vault_address: fx.syncVault,
      status: 'active',
      occurred_at: new Date(Number(block.timestamp) * 1000).toISOString(),
    });
    expect(deployed[0]!.payload).toMatch(/"occurred_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/);
  });

  const engineCall = (fn: 'pause' | 'unpause') =>
    send(
      fx,
      OPERATOR,
      product.engineAddress as Address,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: fn }),
    );
  const halt = (on: boolean) =>
    send(
      fx,
      OPERATOR,
      fx.syncVault,
      encodeFunctionData({ abi: yieldVaultAbi, functionName: 'setPaused', args: [on] }),
    );

  it('follows the engine pause at depth: paused with vault_pause, once per UTC day', async () => {
    const worker = lifecycle();
    await engineCall('pause');
    await worker.tick();
    expect((await reload()).status).toBe('active'); // not yet at depth
    await mine(2);
    expect((await worker.tick()).moved).toEqual([slug]);
    expect(await reload()).toMatchObject({
      status: 'paused',
      chainPaused: true,
      operatorPaused: false,
    });
    expect(await vaultPauses()).toEqual([dedupeKey.pause(slug, '2030-03-01')]);
    const [event] = await createEventsRepo(t.db).list({
      eventType: 'vault_pause',
      productId: product.id,
    });
    expect(JSON.parse(event!.payload)).toEqual({ slug, status: 'paused' });

    clock = new Date('2030-03-01T23:59:59Z');
    await worker.tick();
    expect(await vaultPauses()).toHaveLength(1); // same UTC day: not again
    clock = new Date('2030-03-02T00:00:01Z');
    await worker.tick();
    await worker.tick();
    expect(await vaultPauses()).toEqual([
      dedupeKey.pause(slug, '2030-03-01'),
      dedupeKey.pause(slug, '2030-03-02'),
    ]);
  });

  it('resumes to active with no event when the engine is unpaused', async () => {
    const worker = lifecycle();
    await engineCall('unpause');
    await mine(2);
    expect((await worker.tick()).moved).toEqual([slug]);
    expect(await reload()).toMatchObject({ status: 'active', chainPaused: false });
    expect(await vaultPauses()).toHaveLength(2);
  });

  it('pauses on an upstream halt; a second entry the same day still stores vault_pause', async () => {
    const worker = lifecycle();
    await halt(true);
    await mine(2);
    await worker.tick();
    expect(await reload()).toMatchObject({
      status: 'paused',
      upstreamHalted: true,
      chainPaused: false,
    });
    const keys = await vaultPauses();
    expect(keys).toHaveLength(3);
    expect(keys[2]).toMatch(new RegExp(`^vault_pause:${slug}:2030-03-02@`));
    await worker.tick();
    expect(await vaultPauses()).toHaveLength(3);

    await halt(false);
    await mine(2);
    await worker.tick();
    expect(await reload()).toMatchObject({ status: 'active', upstreamHalted: false });
  });

  it('changes fees by the operator command: a decrease at once, an increase after its notice; the product shows the fees in force', async () => {
    const ctx = {
      db: t.db,
      chainFor: async () => ({ chain: chain(), client: createChainClient(chain()) }),
      now: () => clock,
    };
    const worker = lifecycle();
    const automine = async <T>(f: () => Promise<T>): Promise<T> => {
      await fx.rpc('evm_setAutomine', [true]);
      try {
        return await f();
      } finally {
        await fx.rpc('evm_setAutomine', [false]);
        fx.now = Number((await createChainClient(chain()).getBlock()).timestamp) + 1;
      }
    };
    // A decrease applies at once on chain; the product follows at depth.
    const down = await automine(() =>
      changeProductFees(ctx, slug, { serviceFeeBps: 400, partnerFeeBps: 900 }),
    );
    expect(down).toMatchObject({
      result: 'applied',
      inForce: { serviceFeeBps: 400, partnerFeeBps: 900 },
      recorded: { serviceFeeBps: 500, partnerFeeBps: 1000 },
      scheduled: null,
    });
    await mine(2);
    await worker.tick();
    expect(await reload()).toMatchObject({ serviceFeeBps: 400, partnerFeeBps: 900 });
    // An increase is only scheduled: neither the engine nor the product charge it yet.
    const up = await automine(() =>
      changeProductFees(ctx, slug, { serviceFeeBps: 400, partnerFeeBps: 1200 }),
    );
    expect(up.result).toBe('scheduled');
    expect(up.inForce).toEqual({ serviceFeeBps: 400, partnerFeeBps: 900 });
    expect(up.scheduled).toMatchObject({ serviceFeeBps: 400, partnerFeeBps: 1200 });
    const { timestamp } = await createChainClient(chain()).getBlock();
    expect(up.scheduled?.effectiveAt).toBe(timestamp + 7n * 86_400n);
    await expect(applyProductFeeChange(ctx, slug)).rejects.toThrow(/may apply from/);
    await mine(2);
    await worker.tick();
    expect(await reload()).toMatchObject({ serviceFeeBps: 400, partnerFeeBps: 900 });
    // After the notice anyone may apply it; the product shows it once confirmed.
    fx.now += 7 * 86_400;
    await mineBlock(fx);
    const applied = await automine(() => applyProductFeeChange(ctx, slug));
    expect(applied).toMatchObject({
      result: 'applied',
      inForce: { serviceFeeBps: 400, partnerFeeBps: 1200 },
      scheduled: null,
    });
    await mine(2);
    await worker.tick();
    expect(await reload()).toMatchObject({ serviceFeeBps: 400, partnerFeeBps: 1200 });
    // A scheduled increase can be cancelled; nothing left to cancel afterwards.
    await automine(() => changeProductFees(ctx, slug, { serviceFeeBps: 600, partnerFeeBps: 1200 }));
    const cancelled = await automine(() => cancelProductFeeChange(ctx, slug));
    expect(cancelled).toMatchObject({ result: 'cancelled', scheduled: null });
    await expect(cancelProductFeeChange(ctx, slug)).rejects.toThrow(/no scheduled fee change/);
    await expect(
      changeProductFees(ctx, slug, { serviceFeeBps: 3000, partnerFeeBps: 2001 }),
    ).rejects.toThrow(/at most 5000/);
    expect(await showProductFees(ctx, slug)).toMatchObject({
      inForce: { serviceFeeBps: 400, partnerFeeBps: 1200 },
      scheduled: null,
    });
  });

  it('deprecates on the operator command: on chain and in the database, final', async () => {
    await fx.rpc('evm_setAutomine', [true]);
    try {
      const out = await deprecateProduct(
        {
          db: t.db,
          chainFor: async () => ({ chain: chain(), client: createChainClient(chain()) }),
          now: () => clock,
        },
        slug,
      );
      expect(out.status).toBe('deprecated');
      expect(out.txHash).toMatch(/^0x/);
    } finally {
      await fx.rpc('evm_setAutomine', [false]);
    }
    const onChain = await createChainClient(chain()).readContract({
      address: product.engineAddress as Address,
      abi: yieldEngineAbi,
      functionName: 'deprecated',
    });
    expect(onChain).toBe(true);
    fx.now = Number((await createChainClient(chain()).getBlock()).timestamp) + 1;
    await mine(2);
    await lifecycle().tick();
    expect((await reload()).status).toBe('deprecated');
    await expect(
      deprecateProduct(
        {
          db: t.db,
          chainFor: async () => ({ chain: chain(), client: createChainClient(chain()) }),
        },
        slug,
      ),
    ).rejects.toThrow(/deprecated, which is final/);
  });
  it('skips a held product; rebroadcasts a deployment recorded but never sent (a crash) instead of signing another', async () => {
    const repo = createProductsRepo(t.db);
    const store = createProductDeploysRepo(t.db);
    const base = { ...product, slug: `next-${engine}` };
    const next = await repo.create({
      ...base,
      underlyingVaultAddress: fx.syncVault,
      assetAddress: fx.asset,
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
      deployed: undefined,
    });
    expect(await store.setHold(next.id, true)).toBe(true);
    await lifecycle().tick();
    expect((await repo.getById(next.id))?.deployTxHash).toBeNull();
    await store.setHold(next.id, false);

    // What startDeployment does up to the crash: sign and record, never broadcast.
    const wallet = operatorWallet(chain())!;
    const request = await wallet.prepareTransactionRequest({
      data: encodeDeployData({
        abi: yieldEngineAbi,
        bytecode: yieldEngineBytecode,
        args: engineConstructorArgs({
          asset: fx.asset,
          underlyingVault: fx.syncVault,
          name: 'Next',
          symbol: 'yN',
          serviceFeeRecipient: SERVICE,
          partnerFeeRecipient: PARTNER,
          serviceFeeBps: 500,
          partnerFeeBps: 1000,
          operator: OPERATOR,
        }),
      }),
    });
    const raw = await wallet.signTransaction(request);
    const hash = keccak256(raw);
    expect(await store.recordSigned(next.id, hash, raw)).toBe(true);
    const nonceBefore = await operatorNonce();

    const worker = lifecycle();
    await worker.tick(); // the node never saw it: rebroadcast
    await mine(3);
    expect((await worker.tick()).deployed).toEqual([`next-${engine}`]);
    const after = await repo.getById(next.id);
    expect(after).toMatchObject({ status: 'active', deployTxHash: hash });
    expect(await operatorNonce()).toBe(nonceBefore + 1);
  });
  it('deploys several pending products of one tick with distinct consecutive nonces, never anew', async () => {
    const repo = createProductsRepo(t.db);
    const store = createProductDeploysRepo(t.db);
    const slugs = [0, 1, 2].map((i) => `multi-${i}-${engine}`);
    const created: Product[] = [];
    for (const s of slugs) {
      created.push(
        await repo.create({
          ...product,
          slug: s,
          underlyingVaultAddress: fx.syncVault,
          assetAddress: fx.asset,
          serviceFeeRecipient: SERVICE,
          partnerFeeRecipient: PARTNER,
          deployed: undefined,
        }),
      );
    }
    const nonceBefore = await operatorNonce();
    const captured = captureLogger('info');
    const worker = lifecycle('worker-1', captured.logger);

    await worker.tick(); // one tick signs, records and broadcasts all three
    const nonces: number[] = [];
    for (const p of created) {
      const raw = await store.rawTx(p.id);
      expect(raw).toMatch(/^0x/);
      nonces.push(parseTransaction(raw!).nonce!);
    }
    expect(nonces).toEqual([nonceBefore, nonceBefore + 1, nonceBefore + 2]);

    await mine(3);
    const { deployed } = await worker.tick();
    expect([...deployed].sort()).toEqual([...slugs].sort());
    await mine(1);
    await worker.tick();

    const lines = captured.lines();
    expect(lines.filter((l) => l.includes('"deploying engine"'))).toHaveLength(3);
    expect(lines.filter((l) => l.includes('deploying anew'))).toEqual([]);
    expect(await operatorNonce()).toBe(nonceBefore + 3); // exactly three transactions
    const engines = new Set<string>();
    for (const p of created) {
      const after = (await repo.getById(p.id))!;
      expect(after.status).toBe('active');
      expect(after.engineAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
      engines.add(after.engineAddress!);
      const first = await createSnapshotsRepo(t.db).latest(p.id);
      expect(first).toMatchObject({ provisional: true, blockNumber: after.deployedBlock });
    }
    expect(engines.size).toBe(3); // each its own engine
  });
  it('never redoes a deployment that is mined between its receipt read and the nonce check', async () => {
    const repo = createProductsRepo(t.db);
    const race = await repo.create({
      ...product,
      slug: `race-${engine}`,
      underlyingVaultAddress: fx.syncVault,
      assetAddress: fx.asset,
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
      deployed: undefined,
    });
    // A node that answers the broadcast before it mines: the first receipt read misses, and the
    // transaction is mined right after (what a real first start on the local chain showed).
    const real = createChainClient(chain());
    let mineOnMiss = true;
    const racy = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'getTransactionReceipt') return Reflect.get(target, prop, receiver);
        return async (args: Parameters<typeof real.getTransactionReceipt>[0]) => {
          try {
            return await target.getTransactionReceipt(args);
          } catch (err) {
            if (mineOnMiss) {
              mineOnMiss = false;
              await mine(1);
            }
            throw err;
          }
        };
      },
    });
    const captured = captureLogger('info');
    const worker = createLifecycle({
      db: t.db,
      logger: captured.logger,
      chain: chain(),
      client: racy,
      holder: 'worker-1',
      now: () => clock,
    });
    const nonceBefore = await operatorNonce();
    await worker.tick();
    const hash = (await repo.getById(race.id))?.deployTxHash;
    expect(hash).toMatch(/^0x/);
    await worker.tick(); // the receipt read misses, then the transaction is mined
    expect(mineOnMiss).toBe(false);
    await mine(3);
    expect((await worker.tick()).deployed).toEqual([`race-${engine}`]);
    expect(await repo.getById(race.id)).toMatchObject({ status: 'active', deployTxHash: hash });
    expect(await operatorNonce()).toBe(nonceBefore + 1);
    expect(captured.lines().filter((l) => l.includes('deploying anew'))).toEqual([]);
  });
  it('redoes a recorded deployment only once another transaction took its nonce at depth', async () => {
    const repo = createProductsRepo(t.db);
    const store = createProductDeploysRepo(t.db);
    const lost = await repo.create({
      ...product,
      slug: `lost-${engine}`,
      underlyingVaultAddress: fx.syncVault,
      assetAddress: fx.asset,
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
      deployed: undefined,
    });
    // Signed and recorded, never sent (a crash); then the operator account uses that nonce for
    // something else.
    const wallet = operatorWallet(chain())!;
    const request = await wallet.prepareTransactionRequest({
      data: encodeDeployData({
        abi: yieldEngineAbi,
        bytecode: yieldEngineBytecode,
        args: engineConstructorArgs({
          asset: fx.asset,
          underlyingVault: fx.syncVault,
          name: 'Lost',
          symbol: 'yL',
          serviceFeeRecipient: SERVICE,
          partnerFeeRecipient: PARTNER,
          serviceFeeBps: 500,
          partnerFeeBps: 1000,
          operator: OPERATOR,
        }),
      }),
    });
    const raw = await wallet.signTransaction(request);
    const hash = keccak256(raw);
    expect(await store.recordSigned(lost.id, hash, raw)).toBe(true);
    const nonceBefore = await operatorNonce();
    expect(parseTransaction(raw).nonce).toBe(nonceBefore);
    await send(fx, OPERATOR, SERVICE, '0x'); // takes the nonce, in the newest block

    const captured = captureLogger('info');
    const worker = lifecycle('worker-1', captured.logger);
    await worker.tick(); // the nonce is used, but not yet at depth: kept
    expect((await repo.getById(lost.id))?.deployTxHash).toBe(hash);
    await mine(2);
    await worker.tick(); // used at a confirmed block and still no receipt: forgotten
    expect((await repo.getById(lost.id))?.deployTxHash).toBeNull();
    expect(captured.lines().filter((l) => l.includes('deploying anew'))).toHaveLength(1);

    await worker.tick(); // deploys anew, with the next nonce
    const again = (await repo.getById(lost.id))?.deployTxHash;
    expect(again).toMatch(/^0x/);
    expect(again).not.toBe(hash);
    await mine(3);
    expect((await worker.tick()).deployed).toEqual([`lost-${engine}`]);
    expect(await operatorNonce()).toBe(nonceBefore + 2); // the other transaction and one engine
  });
});
