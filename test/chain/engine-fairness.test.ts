/**
 * Issue #28 on a real anvil: every holder paid their own due on every standard underlying, and no
 * fee avoided by waiting in an exit. Underlyings: the ERC-7540 reference pattern (every request of
 * the engine under id 0, fulfilled by amount in parts at different prices: PooledAsyncVault), the
 * project's own-id AsyncYieldVault, a vault whose maxDeposit is near 2^256 (HugeDepositVault), and a
 * fee-on-transfer asset (FeeOnTransferUSD).
 */
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  decodeEventLog,
  encodeFunctionData,
  getAddress,
  type Hex,
  maxUint256,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssetCheckError, checkAsset } from '../../src/chain/asset-probe.ts';
import {
  createChainClient,
  createChainWallet,
  endpointOf,
  LOCAL_NODE_WALLET,
} from '../../src/chain/client.ts';
import { deployContract, deployEngine } from '../../src/chain/deploy.ts';
import {
  feeOnTransferUSDAbi,
  feeOnTransferUSDBytecode,
  hugeDepositVaultAbi,
  hugeDepositVaultBytecode,
  pooledAsyncVaultAbi,
  pooledAsyncVaultBytecode,
  probingAsyncVaultAbi,
  probingAsyncVaultBytecode,
  rebasingUSDAbi,
  rebasingUSDBytecode,
  testUSDAbi,
  yieldEngineAbi,
  yieldVaultAbi,
  yieldVaultBytecode,
} from '../../src/chain/generated/index.ts';
import { aprBpsToRatePerSecond } from '../../src/chain/local/rates.ts';
import { signerAccount } from '../../src/chain/signer.ts';
import { createTxSender } from '../../src/chain/tx-sender.ts';
import { createProductsRepo } from '../../src/db/products.ts';
import { localChainSettings } from '../../src/sync/chain-runtime.ts';
import { createRequestKeeper } from '../../src/sync/lifecycle/request-keeper.ts';
import { deployed, newProduct, partnerWithKey } from '../helpers/builders.ts';
import { freshDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { startProviderProxy } from '../helpers/provider-proxy.ts';
import {
  assetBalance,
  engineEvents,
  engineReader,
  engineWrite,
  type Fixture,
  newEngine,
  OPERATOR,
  PARTNER,
  SERVICE,
  send,
  setupFixture,
  USD,
  USERS,
  warp,
} from './helpers.ts';

let fx: Fixture;

beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

function wallet() {
  return createChainWallet(
    endpointOf(fx.anvil.rpcUrl, fx.anvil.chainId),
    OPERATOR,
    LOCAL_NODE_WALLET,
  );
}

/** Deploys with automine on (as newEngine does), at the next block time. */
async function deploy(abi: Abi, bytecode: Hex, args: readonly unknown[]): Promise<Address> {
  await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
  await fx.rpc('evm_setAutomine', [true]);
  try {
    return (await deployContract(wallet(), fx.client, abi, bytecode, args)).address;
  } finally {
    await fx.rpc('evm_setAutomine', [false]);
  }
}

async function newPooledVault(aprBps: number): Promise<Address> {
  const vault = await deploy(pooledAsyncVaultAbi as Abi, pooledAsyncVaultBytecode, [
    fx.asset,
    'Pooled',
    'pUSD',
    OPERATOR,
    aprBpsToRatePerSecond(aprBps),
  ]);
  await send(
    fx,
    OPERATOR,
    fx.asset,
    encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [vault, true] }),
  );
  return vault;
}

const readEngine = <T>(engine: Address, functionName: string, args: unknown[] = []) =>
  fx.client.readContract({
    address: engine,
    abi: yieldEngineAbi as Abi,
    functionName,
    args,
  }) as Promise<T>;

function revertName(e: unknown): string | undefined {
  if (e instanceof BaseError) {
    const r = e.walk((x) => x instanceof ContractFunctionRevertedError);
    if (r instanceof ContractFunctionRevertedError) return r.data?.errorName;
  }
  return undefined;
}

async function fulfil(vault: Address, engine: Address, shares: bigint) {
  const receipt = await send(
    fx,
    OPERATOR,
    vault,
    encodeFunctionData({
      abi: pooledAsyncVaultAbi,
      functionName: 'fulfillRedeem',
      args: [engine, shares],
    }),
  );
  const ev = receipt.logs
    .filter((l) => l.address.toLowerCase() === vault.toLowerCase())
    .map((l) => decodeEventLog({ abi: pooledAsyncVaultAbi, data: l.data, topics: l.topics }))
    .find((e) => e.eventName === 'RedeemFulfilled');
  if (ev?.eventName !== 'RedeemFulfilled') throw new Error('no RedeemFulfilled');
  return { shares: ev.args.shares, assets: ev.args.assets };
}

const settle = (engine: Address) =>
  send(
    fx,
    USERS[9] as Address,
    engine,
    encodeFunctionData({ abi: yieldEngineAbi, functionName: 'settleRequests' }),
  );

interface Terms {
  idleAssets: bigint;
  baseAssets: bigint;
  feeBps: bigint;
  queueStart: bigint;
}

describe('item 1: pooled request id 0, partial fulfilment at different prices, many users', () => {
  it('each claim is the user’s own settled value to the base unit; no claim waits on another’s request', async () => {
    const vault = await newPooledVault(1_000);
    // No fee: the claim is exactly the settled value (the fee rule is tested below).
    const engine = await newEngine(fx, vault, { service: 0, partner: 0 });
    const users = USERS.slice(0, 6) as Address[];
    for (const [i, u] of users.entries())
      await engineWrite(fx, engine, u, { fn: 'deposit', args: [BigInt(1_000 + 137 * i) * USD, u] });
    // Requests spread over time: each is filed upstream under id 0.
    const ids: bigint[] = [];
    for (const u of users) {
      await warp(fx, 3 * 86_400);
      const shares = ((await engineReader(fx, engine).balanceOf(u)) * 2n) / 3n;
      const { preview } = await engineWrite(fx, engine, u, {
        fn: 'requestRedeem',
        args: [shares, u, u],
      });
      ids.push(preview);
    }
    expect(await readEngine(engine, 'requestIdScheme')).toBe(2);
    const reqs = await Promise.all(
      ids.map(async (id) => ({
        r: await readEngine<{
          shares: bigint;
          underlyingShares: bigint;
          underlyingRequestId: bigint;
        }>(engine, 'redeemRequest', [id]),
        t: await readEngine<Terms>(engine, 'requestTerms', [id]),
      })),
    );
    for (const q of reqs) expect(q.r.underlyingRequestId).toBe(0n);
    const total = reqs.reduce((s, q) => s + q.r.underlyingShares, 0n);
    // Fulfilments in epochs that cut across requests, each at its own (growing) price; a keeper
    // settles the engine after each.
    const chunks = [
      reqs[0]!.r.underlyingShares, // exactly the first request
      reqs[1]!.r.underlyingShares / 3n, // part of the second
      reqs[1]!.r.underlyingShares -
        reqs[1]!.r.underlyingShares / 3n +
        reqs[2]!.r.underlyingShares / 2n,
    ];
    chunks.push(total - chunks.reduce((a, b) => a + b, 0n) - 12_345n);
    chunks.push(12_345n);
    const fills: { shares: bigint; assets: bigint }[] = [];
    const paid = new Map<number, bigint>();
    for (const [k, c] of chunks.entries()) {
      await warp(fx, 10 * 86_400);
      fills.push(await fulfil(vault, engine, c));
      await settle(engine);
      if (k === 0) {
        // The first request is settled while every later one is still pending: it is claimable
        // at once (before the fix: NotClaimable until every request of the engine had settled).
        expect(await readEngine(engine, 'claimableRedeemRequest', [ids[0], users[0]])).toBe(
          reqs[0]!.r.shares,
        );
        expect(await readEngine(engine, 'pendingRedeemRequest', [ids[1], users[1]])).toBe(
          reqs[1]!.r.shares,
        );
        const before = await assetBalance(fx, users[0]!);
        await engineWrite(fx, engine, users[0]!, { fn: 'claimRedeem', args: [ids[0]!, users[0]!] });
        paid.set(0, (await assetBalance(fx, users[0]!)) - before);
      }
    }
    // Expected: each request's interval of the queue, valued fulfilment by fulfilment at that
    // fulfilment's own price (cumulative, rounded down), plus the idle part it took (none here).
    const cumAt = (x: bigint) => {
      let s = 0n;
      let a = 0n;
      for (const f of fills) {
        if (x <= s + f.shares) return a + ((x - s) * f.assets) / f.shares;
        s += f.shares;
        a += f.assets;
      }
      throw new Error('beyond the fulfilled queue');
    };
    // Claims in an order unrelated to the requests'.
    for (const i of [4, 2, 5, 1, 3]) {
      const u = users[i]!;
      const before = await assetBalance(fx, u);
      await engineWrite(fx, engine, u, { fn: 'claimRedeem', args: [ids[i]!, u] });
      paid.set(i, (await assetBalance(fx, u)) - before);
    }
    for (const [i, q] of reqs.entries()) {
      const own =
        cumAt(q.t.queueStart + q.r.underlyingShares) - cumAt(q.t.queueStart) + q.t.idleAssets;
      expect(paid.get(i), `user ${i}`).toBe(own);
    }
    // The prices differed: the pooled average would have paid someone else's price.
    const prices = fills.map((f) => (f.assets * 10n ** 18n) / f.shares);
    expect(new Set(prices).size).toBe(prices.length);
    expect(await readEngine(engine, 'pendingUnderlyingShares')).toBe(0n);
  });
});

describe('item 2: the fee covers yield earned while in a request', () => {
  it('requesting at once and claiming a year later pays the fee and never beats staying in the pool', async () => {
    // The audit's case on the project's own async vault: 10,000 each at 10 % APR, 20 % fee.
    const [early, stayer] = USERS.slice(6, 8) as [Address, Address];
    await send(
      fx,
      OPERATOR,
      fx.asyncVault,
      encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'setRatePerSecond',
        args: [aprBpsToRatePerSecond(1_000)],
      }),
    );
    const engine = await newEngine(fx, fx.asyncVault, { service: 1_000, partner: 1_000 });
    const r = engineReader(fx, engine);
    // One deposit split in two: both hold identical shares from the same block (the first deposit
    // also pays the seed).
    await engineWrite(fx, engine, early, {
      fn: 'deposit',
      args: [20_000n * USD + (await r.seedAssets()), early],
    });
    const shares = (await r.balanceOf(early)) / 2n;
    await send(
      fx,
      early,
      engine,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: 'transfer', args: [stayer, shares] }),
    );
    expect(await r.balanceOf(stayer)).toBe(shares);
    const { preview: id } = await engineWrite(fx, engine, early, {
      fn: 'requestRedeem',
      args: [shares, early, early],
    });
    const terms = await readEngine<Terms>(engine, 'requestTerms', [id]);
    await warp(fx, 365 * 86_400);
    const before = await assetBalance(fx, early);
    const { receipt } = await engineWrite(fx, engine, early, {
      fn: 'claimRedeem',
      args: [id, early],
    });
    const claimed = (await assetBalance(fx, early)) - before;
    // In the same block as the claim's accrual: what the stayer's identical shares are worth.
    const stayerValue = await r.convertToAssets(await r.balanceOf(stayer));
    const events = engineEvents(receipt, engine);
    const charged = events.find((e) => e.eventName === 'RequestFeeCharged');
    if (charged?.eventName !== 'RequestFeeCharged') throw new Error('no RequestFeeCharged');
    const gross = charged.args.grossAssets;
    const yieldInRequest = gross - terms.baseAssets;
    // The fee is at least 20 % of the request's own yield (before the fix: none at all).
    expect(charged.args.feeAssets).toBeGreaterThanOrEqual((yieldInRequest * 2_000n) / 10_000n);
    expect(claimed).toBe(gross - charged.args.feeAssets);
    // Requesting early never beats staying (the stayer's value is read with the virtual offset,
    // at most one base unit below the pool's real price the claim is capped by).
    expect(claimed).toBeLessThanOrEqual(stayerValue + 1n);
    // ... and costs at most rounding: the requester is not charged more than the stayer paid.
    expect(stayerValue - claimed).toBeLessThanOrEqual(2n);
    // Roughly the audit's figures: ~10,800 each (simple interest upstream), not 11,000.
    expect(claimed / USD).toBe(10_800n);
    // The request's fee reached the recipients as shares, counted like any fee.
    const accrued = events.filter((e) => e.eventName === 'FeesAccrued');
    expect(accrued.length).toBeGreaterThan(0);
    expect((await r.balanceOf(SERVICE)) + (await r.balanceOf(PARTNER))).toBeGreaterThan(0n);
    await send(
      fx,
      OPERATOR,
      fx.asyncVault,
      encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'setRatePerSecond',
        args: [aprBpsToRatePerSecond(600)],
      }),
    );
  });

  it('on a pooled-id underlying, a request settled early and claimed late earns nothing after settlement', async () => {
    const [early, stayer] = USERS.slice(6, 8) as [Address, Address];
    const vault = await newPooledVault(1_000);
    const engine = await newEngine(fx, vault, { service: 1_000, partner: 1_000 });
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, early, { fn: 'deposit', args: [10_000n * USD, early] });
    await engineWrite(fx, engine, stayer, { fn: 'deposit', args: [10_000n * USD, stayer] });
    const shares = await r.balanceOf(early);
    const { preview: id } = await engineWrite(fx, engine, early, {
      fn: 'requestRedeem',
      args: [shares, early, early],
    });
    const req = await readEngine<{ underlyingShares: bigint }>(engine, 'redeemRequest', [id]);
    const terms = await readEngine<Terms>(engine, 'requestTerms', [id]);
    await warp(fx, 30 * 86_400);
    const fill = await fulfil(vault, engine, req.underlyingShares);
    await warp(fx, 300 * 86_400);
    const before = await assetBalance(fx, early);
    await engineWrite(fx, engine, early, { fn: 'claimRedeem', args: [id, early] });
    const claimed = (await assetBalance(fx, early)) - before;
    // Settled 30 days in: the fee is 20 % of those 30 days' yield (the pool cap holds too).
    const fee = ((fill.assets - terms.baseAssets) * 2_000n) / 10_000n;
    expect(claimed).toBeLessThanOrEqual(fill.assets - fee);
    expect(fill.assets - fee - claimed).toBeLessThanOrEqual(2n);
    expect(claimed).toBeLessThan(await r.convertToAssets(await r.balanceOf(stayer)));
  });
});

describe('item 3: max* answer on an underlying whose maxDeposit is near 2^256', () => {
  it('maxMint saturates instead of overflowing; previews equal their calls', async () => {
    const vault = await deploy(hugeDepositVaultAbi as Abi, hugeDepositVaultBytecode, [
      fx.asset,
      'Huge',
      'hUSD',
      OPERATOR,
      aprBpsToRatePerSecond(500),
    ]);
    await send(
      fx,
      OPERATOR,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [vault, true] }),
    );
    const engine = await newEngine(fx, vault);
    const user = USERS[0] as Address;
    await engineWrite(fx, engine, user, { fn: 'deposit', args: [1_000n * USD, user] });
    await warp(fx, 86_400);
    const r = engineReader(fx, engine);
    const maxDeposit = await r.maxDeposit(user);
    expect(maxDeposit).toBeGreaterThan(maxUint256 - 10n ** 12n);
    expect(maxDeposit).toBeLessThan(maxUint256);
    // Before the fix: an arithmetic overflow (maxDeposit × ~10^6 shares per asset unit).
    const maxMint = await r.maxMint(user);
    expect(maxMint).toBe(maxUint256);
    // Every mint up to maxMint fits within maxDeposit.
    expect(await readEngine<bigint>(engine, 'previewMint', [maxMint])).toBeLessThanOrEqual(
      maxDeposit,
    );
    for (const fn of ['maxWithdraw', 'maxRedeem'])
      expect(await readEngine<bigint>(engine, fn, [user])).toBeGreaterThan(0n);
    const { preview, receipt } = await engineWrite(fx, engine, user, {
      fn: 'mint',
      args: [10n ** 15n, user],
    });
    const dep = engineEvents(receipt, engine).find((e) => e.eventName === 'Deposit');
    if (dep?.eventName !== 'Deposit') throw new Error('no Deposit');
    expect(dep.args.assets).toBe(preview);
  });
});

describe('item 4: fee-on-transfer and rebasing assets are refused at product creation', () => {
  const checkError = (e: unknown) =>
    e instanceof AssetCheckError ? { code: e.code, message: e.message } : { code: String(e) };

  it('a plain token passes: the balance slot is found and a transfer delivers what it sends', async () => {
    const result = await checkAsset(fx.client, {
      asset: fx.asset,
      underlying: fx.syncVault,
      decimals: 6,
    });
    expect(result.balanceSlot.address).toBe(getAddress(fx.asset));
    expect(result.delivered).toBe(result.sent);
  });

  it('a fee-on-transfer token, a rebasing token and a mismatched vault or decimals are refused', async () => {
    const fot = await deploy(feeOnTransferUSDAbi as Abi, feeOnTransferUSDBytecode, [
      OPERATOR,
      100n,
    ]);
    const rebasing = await deploy(rebasingUSDAbi as Abi, rebasingUSDBytecode, [OPERATOR]);
    const fotResult = await checkAsset(fx.client, { asset: fot }).catch(checkError);
    expect(fotResult).toMatchObject({ code: 'asset_fee_on_transfer' });
    // 1 % of 100.000007 USD: 99.000007 arrives by each path.
    expect((fotResult as { message: string }).message).toMatch(
      /sending 100000007 base units delivered 99000007 by transfer and 99000007 by transferFrom/,
    );
    expect(await checkAsset(fx.client, { asset: rebasing }).catch(checkError)).toMatchObject({
      code: 'asset_rebasing',
    });
    // The engine's constructor would revert WrongAsset: said before anything is deployed.
    expect(
      await checkAsset(fx.client, { asset: fot, underlying: fx.syncVault }).catch(checkError),
    ).toMatchObject({
      code: 'asset_mismatch',
      message: expect.stringMatching(/the underlying vault holds/),
    });
    expect(
      await checkAsset(fx.client, { asset: fx.asset, decimals: 18 }).catch(checkError),
    ).toMatchObject({
      code: 'asset_mismatch',
      message: 'the asset has 6 decimals on chain, not 18: give --asset-decimals 6',
    });
  });

  it('a node without eth_createAccessList: the asset is said unchecked, not passed', async () => {
    const proxy = await startProviderProxy(fx.anvil.rpcUrl);
    try {
      proxy.set({ unsupportedMethods: ['eth_createAccessList'] });
      const client = createChainClient({ chainId: fx.anvil.chainId, rpcUrls: [proxy.url] });
      const result = await checkAsset(client, { asset: fx.asset }).catch(checkError);
      expect(result).toMatchObject({
        code: 'asset_not_checked',
        message: expect.stringMatching(/does not answer eth_createAccessList/),
      });
      expect((result as { message: string }).message).not.toContain(proxy.url);
    } finally {
      await proxy.close();
    }
  });
});

describe('item 4: fee-on-transfer assets are refused', () => {
  it('a deposit or mint that delivers less than it sends reverts with AssetTransferShortfall', async () => {
    const fot = await deploy(feeOnTransferUSDAbi as Abi, feeOnTransferUSDBytecode, [
      OPERATOR,
      100n,
    ]);
    const vault = await deploy(yieldVaultAbi as Abi, yieldVaultBytecode, [
      fot,
      'FoT vault',
      'fvUSD',
      OPERATOR,
      aprBpsToRatePerSecond(500),
    ]);
    await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
    await fx.rpc('evm_setAutomine', [true]);
    const { address: engine } = await deployEngine(wallet(), fx.client, {
      asset: fot,
      underlyingVault: vault,
      name: 'FoT engine',
      symbol: 'fE',
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
      serviceFeeBps: 500,
      partnerFeeBps: 1_000,
      operator: OPERATOR,
    });
    await fx.rpc('evm_setAutomine', [false]);
    const user = USERS[0] as Address;
    await send(
      fx,
      OPERATOR,
      fot,
      encodeFunctionData({
        abi: feeOnTransferUSDAbi,
        functionName: 'mint',
        args: [user, 1_000n * USD],
      }),
    );
    await send(
      fx,
      user,
      fot,
      encodeFunctionData({
        abi: feeOnTransferUSDAbi,
        functionName: 'approve',
        args: [engine, maxUint256],
      }),
    );
    // The token is real: a plain transfer of 100 delivers 99.
    await send(
      fx,
      user,
      fot,
      encodeFunctionData({
        abi: feeOnTransferUSDAbi,
        functionName: 'transfer',
        args: [USERS[1] as Address, 100n * USD],
      }),
    );
    expect(
      await fx.client.readContract({
        address: fot,
        abi: feeOnTransferUSDAbi,
        functionName: 'balanceOf',
        args: [USERS[1] as Address],
      }),
    ).toBe(99n * USD);
    for (const [fn, args] of [
      ['deposit', [100n * USD, user]],
      ['mint', [100n * USD * 10n ** 6n, user]],
    ] as const) {
      const err = await fx.client
        .simulateContract({
          account: user,
          address: engine,
          abi: yieldEngineAbi,
          functionName: fn,
          args,
        })
        .then(() => undefined)
        .catch((e: unknown) => e);
      expect(revertName(err), fn).toBe('AssetTransferShortfall');
    }
    expect(await readEngine(engine, 'totalSupply')).toBe(0n);
  });
});

describe('item 5: the last holder can always leave whole', () => {
  it('requests its whole balance when the engine holds idle asset beside the underlying', async () => {
    const engine = await newEngine(fx, fx.asyncVault, { service: 0, partner: 0 });
    const user = USERS[3] as Address;
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, user, { fn: 'deposit', args: [1_000n * USD, user] });
    await warp(fx, 86_400);
    // Idle asset beside the underlying shares (a donation, or a claim's rounding).
    await send(
      fx,
      USERS[4] as Address,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'transfer', args: [engine, 250n * USD] }),
    );
    const shares = await r.balanceOf(user);
    const total = await r.atNextBlock('totalAssets');
    // The seed shares (minted by the first deposit, held by no one) stay: the user is the last
    // holder of everything else.
    const seedWorth = await r.seedWorth();
    expect(seedWorth).toBeGreaterThan(0n);
    // Before the fix: ExceedsUnderlying (the whole value was asked of the underlying).
    const { preview: id } = await engineWrite(fx, engine, user, {
      fn: 'requestRedeem',
      args: [shares, user, user],
    });
    await warp(fx, 86_400 + 1);
    const before = await assetBalance(fx, user);
    await engineWrite(fx, engine, user, { fn: 'claimRedeem', args: [id, user] });
    const claimed = (await assetBalance(fx, user)) - before;
    // Everything but the seed shares' worth and the virtual offset's dust, yield to the claim included.
    expect(claimed).toBeGreaterThanOrEqual(total - seedWorth - 2n);
    expect(await r.get('totalAssets')).toBeLessThanOrEqual((await r.seedWorth()) + 2n);
  });
});

describe('item 7: the fee-change notice has a floor', () => {
  it('a deployment with a notice shorter than MIN_FEE_CHANGE_DELAY reverts', async () => {
    for (const [delay, ok] of [
      [0, false],
      [86_399, false],
      [86_400, true],
    ] as const) {
      await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
      await fx.rpc('evm_setAutomine', [true]);
      const result = await deployEngine(wallet(), fx.client, {
        asset: fx.asset,
        underlyingVault: fx.syncVault,
        name: 'E',
        symbol: 'E',
        serviceFeeRecipient: SERVICE,
        partnerFeeRecipient: PARTNER,
        serviceFeeBps: 500,
        partnerFeeBps: 500,
        operator: OPERATOR,
        feeChangeDelaySeconds: delay,
      }).then(
        () => true,
        () => false,
      );
      await fx.rpc('evm_setAutomine', [false]);
      expect(result, `delay ${delay}`).toBe(ok);
    }
  });
});

describe('item 7: state is settled before any external call', () => {
  it('price views read from inside the underlying call (read-only reentrancy) are not skewed', async () => {
    // ProbingAsyncVault reads the engine's views on entering requestRedeem and redeem, before it
    // moves anything: the engine has escrowed the shares and counted the pending underlying shares,
    // which it still holds. Before the fix the views counted those shares twice there.
    const vault = await deploy(probingAsyncVaultAbi as Abi, probingAsyncVaultBytecode, [
      fx.asset,
      OPERATOR,
      aprBpsToRatePerSecond(800),
      86_400n,
    ]);
    await send(
      fx,
      OPERATOR,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [vault, true] }),
    );
    const engine = await newEngine(fx, vault, { service: 500, partner: 500 });
    const r = engineReader(fx, engine);
    const [a, b] = USERS.slice(0, 2) as [Address, Address];
    await engineWrite(fx, engine, a, { fn: 'deposit', args: [10_000n * USD, a] });
    await engineWrite(fx, engine, b, { fn: 'deposit', args: [5_000n * USD, b] });
    await warp(fx, 30 * 86_400);
    const seen = async () => ({
      total: await fx.client.readContract({
        address: vault,
        abi: probingAsyncVaultAbi,
        functionName: 'seenTotalAssets',
      }),
      active: await fx.client.readContract({
        address: vault,
        abi: probingAsyncVaultAbi,
        functionName: 'seenActiveAssets',
      }),
      price: await fx.client.readContract({
        address: vault,
        abi: probingAsyncVaultAbi,
        functionName: 'seenConvertToAssets',
      }),
    });
    const now = async () => ({
      total: await r.get('totalAssets'),
      active: await readEngine<bigint>(engine, 'activeAssets'),
      price: await r.convertToAssets(10n ** 12n),
    });

    // The request: inside the call, the views answer what the request leaves behind.
    const { preview: id } = await engineWrite(fx, engine, a, {
      fn: 'requestRedeem',
      args: [await r.balanceOf(a), a, a],
    });
    const inRequest = await seen();
    const afterRequest = await now();
    expect(inRequest.total).toBeGreaterThan(0n);
    expect(inRequest).toEqual(afterRequest);

    // The claim: inside the underlying's redeem, the request is still counted (the state before the
    // claim's transfers), and the pool's price is the one the claim leaves.
    await warp(fx, 86_400 + 1);
    const beforeClaim = {
      total: await r.atNextBlock('totalAssets'),
      active: (await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'activeAssets',
        blockTag: 'pending',
      })) as bigint,
    };
    await engineWrite(fx, engine, a, { fn: 'claimRedeem', args: [id, a] });
    const inClaim = await seen();
    const afterClaim = await now();
    expect(inClaim.total).toBe(beforeClaim.total);
    expect(inClaim.active).toBe(beforeClaim.active);
    // The request's fee joins the pool with fee shares worth exactly it: the price does not move
    // (but for the fee shares' rounding down).
    expect(afterClaim.price - inClaim.price).toBeGreaterThanOrEqual(0n);
    expect(afterClaim.price - inClaim.price).toBeLessThanOrEqual(1n);
  });
});

describe('the request keeper settles a pooled-id engine after each fulfilment', () => {
  it('sends settleRequests() once per fulfilment, through the operator signer, so each keeps its price', async () => {
    const t = await freshDatabase('pglite');
    const logs = captureLogger();
    try {
      const vault = await newPooledVault(1_000);
      const engine = await newEngine(fx, vault, { service: 0, partner: 0 });
      const { partner } = await partnerWithKey(t.db);
      const products = createProductsRepo(t.db);
      await products.create(
        newProduct({
          partnerId: partner.id,
          slug: 'pooled',
          vaultKind: 'async',
          underlyingVaultAddress: vault,
          assetAddress: fx.asset,
          deployed: deployed(engine),
        }),
      );
      const chain = localChainSettings(fx.anvil.rpcUrl, fx.anvil.chainId);
      const sender = createTxSender({
        db: t.db,
        chain,
        client: fx.client,
        account: signerAccount(chain)!,
        log: logs.logger,
        holder: 'test',
      });
      const keeper = createRequestKeeper({
        db: t.db,
        chain,
        client: fx.client,
        products,
        sender,
        log: logs.logger,
      });
      const [u, v] = USERS.slice(0, 2) as [Address, Address];
      await engineWrite(fx, engine, u, { fn: 'deposit', args: [2_000n * USD, u] });
      await engineWrite(fx, engine, v, { fn: 'deposit', args: [2_000n * USD, v] });
      // Before any request the scheme is unknown: nothing to settle.
      expect(await keeper.round()).toEqual([]);
      const ids: bigint[] = [];
      for (const who of [u, v]) {
        const { preview } = await engineWrite(fx, engine, who, {
          fn: 'requestRedeem',
          args: [await engineReader(fx, engine).balanceOf(who), who, who],
        });
        ids.push(preview);
      }
      expect(await readEngine(engine, 'requestIdScheme')).toBe(2);
      // Nothing fulfilled upstream yet.
      expect(await keeper.round()).toEqual([]);
      const first = await readEngine<{ underlyingShares: bigint }>(engine, 'redeemRequest', [
        ids[0],
      ]);
      const settledPrices: bigint[] = [];
      for (const chunk of [first.underlyingShares, null]) {
        await warp(fx, 20 * 86_400); // the upstream price grows between the fulfilments
        const pending = await readEngine<bigint>(engine, 'pendingUnderlyingShares');
        const { assets, shares } = await fulfil(vault, engine, chunk ?? pending);
        settledPrices.push((assets * 10n ** 18n) / shares);
        expect((await keeper.round()).map((a) => a.toLowerCase())).toEqual([engine.toLowerCase()]);
        // In flight: not sent twice.
        expect(await keeper.round()).toEqual([]);
        await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
        await fx.rpc('evm_mine', []);
        expect((await sender.followPending()).map((f) => f.status)).toEqual(['mined']);
      }
      // Two checkpoints, each at its own fulfilment's price (before the keeper, one call after
      // both would have seen their average).
      const checkpoints = await readEngine<{ cumShares: bigint; cumAssets: bigint }[]>(
        engine,
        'settlementCheckpoints',
      );
      expect(checkpoints).toHaveLength(2);
      const [c0, c1] = checkpoints as [
        { cumShares: bigint; cumAssets: bigint },
        { cumShares: bigint; cumAssets: bigint },
      ];
      expect((c0.cumAssets * 10n ** 18n) / c0.cumShares).toBe(settledPrices[0]);
      expect(((c1.cumAssets - c0.cumAssets) * 10n ** 18n) / (c1.cumShares - c0.cumShares)).toBe(
        settledPrices[1],
      );
      expect(settledPrices[1]).toBeGreaterThan(settledPrices[0]!);
      // Everything settled: nothing left for the keeper.
      expect(await readEngine<bigint>(engine, 'pendingUnderlyingShares')).toBe(0n);
      expect(await keeper.round()).toEqual([]);
    } finally {
      await t.drop();
    }
  });
});
