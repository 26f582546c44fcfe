/**
 * Regression tests for the findings of the engine review (issue #12), each on a real anvil. Every
 * test here failed on the engine before its fix (bf03237).
 */
import {
  type Address,
  decodeEventLog,
  encodeFunctionData,
  getAddress,
  type Hash,
  type Hex,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  asyncYieldVaultAbi,
  testUSDAbi,
  yieldEngineAbi,
  yieldVaultAbi,
} from '../../src/chain/generated/index.ts';
import { readExitStatus } from '../../src/chain/read-exit-status.ts';
import {
  assetBalance,
  engineEvents,
  engineReader,
  engineWrite,
  type Fixture,
  mineBlock,
  newEngine,
  OPERATOR,
  send,
  setRate,
  setupFixture,
  USD,
  USERS,
  warp,
} from './helpers.ts';

const [alice, bob, mallory] = USERS as [Address, Address, Address];
let fx: Fixture;

beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

/** Fee assets minted so far (service + partner). */
async function feeAssets(engine: Address): Promise<bigint> {
  const r = engineReader(fx, engine);
  return (await r.get('serviceFeeAssetsTotal')) + (await r.get('partnerFeeAssetsTotal'));
}

describe('finding 4: accrueFees() cannot shave the fee', () => {
  it('accruing every 12 s for an hour charges the same fee as one accrual at the end', async () => {
    // 100 USD at 5 % APR and a 15 % fee: each 12 s of yield carries a fee below one base unit.
    await setRate(fx, fx.syncVault, 500);
    const griefed = await newEngine(fx, fx.syncVault, { service: 500, partner: 1000 });
    const quiet = await newEngine(fx, fx.syncVault, { service: 500, partner: 1000 });
    await engineWrite(fx, griefed, alice, { fn: 'deposit', args: [100n * USD, alice] });
    await engineWrite(fx, quiet, bob, { fn: 'deposit', args: [100n * USD, bob] });
    const accrue = encodeFunctionData({ abi: yieldEngineAbi, functionName: 'accrueFees' });
    const hashes: Hash[] = [];
    for (let i = 0; i < 300; i++) {
      fx.now += 11;
      hashes.push(
        (await fx.rpc('eth_sendTransaction', [
          { from: mallory, to: griefed, data: accrue, gas: '0x7a120' },
        ])) as Hash,
      );
      await mineBlock(fx);
    }
    for (const hash of hashes.slice(-3))
      expect((await fx.client.getTransactionReceipt({ hash })).status).toBe('success');
    // One accrual of each at the same block: the quiet engine charges its whole hour at once.
    for (const engine of [griefed, quiet])
      await fx.rpc('eth_sendTransaction', [
        { from: mallory, to: engine, data: accrue, gas: '0x7a120' },
      ]);
    await mineBlock(fx);
    const fair = await feeAssets(quiet);
    const charged = await feeAssets(griefed);
    expect(fair).toBeGreaterThan(50n); // ~85 base units: an hour of 15 % of 5 % APR on 100 USD
    // Before the fix the griefed engine charged 0 (the mark followed the price at every accrual).
    // Each charged accrual rounds its fee down by less than a base unit, carried to the next.
    expect(charged).toBeGreaterThanOrEqual(fair - 2n);
    expect(charged).toBeLessThanOrEqual(fair + 2n);
    await setRate(fx, fx.syncVault, 800);
  });
});

const read = <T>(
  address: Address,
  abi: readonly unknown[],
  functionName: string,
  args: unknown[] = [],
) =>
  fx.client.readContract({ address, abi: abi as never, functionName, args } as never) as Promise<T>;

async function vaultCall(vault: Address, data: Hex): Promise<void> {
  await send(fx, OPERATOR, vault, data);
}

const haltExits = (vault: Address, halted: boolean) =>
  vaultCall(
    vault,
    encodeFunctionData({ abi: yieldVaultAbi, functionName: 'setExitsHalted', args: [halted] }),
  );

describe('finding 1: asynchronous exits through the standard ERC-7540 redeem flow', () => {
  it('requests and claims on a strict ERC-7540 vault (its previews revert)', async () => {
    const engine = await newEngine(fx, fx.asyncVault);
    // The vault is strict: previews of its asynchronous exits revert, as ERC-7540 requires.
    await expect(
      read(fx.asyncVault, asyncYieldVaultAbi, 'previewWithdraw', [1n]),
    ).rejects.toThrow();
    await expect(read(fx.asyncVault, asyncYieldVaultAbi, 'previewRedeem', [1n])).rejects.toThrow();
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [10_000n * USD, alice] });
    await warp(fx, 86_400);
    const shares = (await engineReader(fx, engine).balanceOf(alice)) / 3n;
    // Before the fix this reverted: the engine called the vault's previewWithdraw.
    const { preview: requestId, receipt } = await engineWrite(fx, engine, alice, {
      fn: 'requestRedeem',
      args: [shares, alice, alice],
    });
    // The underlying saw a standard request: RedeemRequest(controller = engine, owner = engine, ...).
    const upstream = receipt.logs
      .filter((l) => l.address.toLowerCase() === fx.asyncVault.toLowerCase())
      .map((l) => decodeEventLog({ abi: asyncYieldVaultAbi, data: l.data, topics: l.topics }))
      .find((e) => e.eventName === 'RedeemRequest');
    if (upstream?.eventName !== 'RedeemRequest') throw new Error('no upstream RedeemRequest');
    expect(upstream.args.controller).toBe(getAddress(engine));
    expect(upstream.args.owner).toBe(getAddress(engine));
    const request = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'redeemRequest',
      args: [requestId],
    });
    expect(request.underlyingShares).toBe(upstream.args.shares);
    // Engine views in ERC-7540 form, following the underlying request.
    const views = () =>
      Promise.all(
        (['pendingRedeemRequest', 'claimableRedeemRequest'] as const).map((functionName) =>
          fx.client.readContract({
            address: engine,
            abi: yieldEngineAbi,
            functionName,
            args: [requestId, alice],
          }),
        ),
      );
    expect(await views()).toEqual([shares, 0n]);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'claimRedeem', args: [requestId, alice] }),
    ).rejects.toThrow();
    await warp(fx, 86_400 + 1);
    expect(await views()).toEqual([0n, shares]);
    const before = await assetBalance(fx, alice);
    const claim = await engineWrite(fx, engine, alice, {
      fn: 'claimRedeem',
      args: [requestId, alice],
    });
    // The engine claimed with the standard redeem(shares, engine, controller = engine) ...
    const upstreamWithdraw = claim.receipt.logs
      .filter((l) => l.address.toLowerCase() === fx.asyncVault.toLowerCase())
      .map((l) => decodeEventLog({ abi: asyncYieldVaultAbi, data: l.data, topics: l.topics }))
      .find((e) => e.eventName === 'Withdraw');
    if (upstreamWithdraw?.eventName !== 'Withdraw') throw new Error('no upstream Withdraw');
    expect(upstreamWithdraw.args.owner).toBe(getAddress(engine));
    expect(upstreamWithdraw.args.shares).toBe(request.underlyingShares);
    // ... and paid the holder what it received less the fee on the request's yield (issue #28:
    // 15 % of what the request earned above its value at request time).
    const terms = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'requestTerms',
      args: [requestId],
    });
    const gross = upstreamWithdraw.args.assets + terms.idleAssets;
    const fee = ((gross - terms.baseAssets) * 1_500n) / 10_000n;
    expect(fee).toBeGreaterThan(0n);
    expect((await assetBalance(fx, alice)) - before).toBe(gross - fee);
    expect(claim.preview).toBe(gross - fee);
    expect(await views()).toEqual([0n, 0n]);
    expect(await readExitStatus(fx.client, { engine })).toMatchObject({ async: true });
  });
});

describe('finding 2: maxWithdraw and maxRedeem reflect the underlying’s limits', () => {
  it('promise only the idle assets while the underlying halts exits, and those calls succeed', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [5_000n * USD, alice] });
    await haltExits(fx.syncVault, true);
    const max = (fn: 'maxWithdraw' | 'maxRedeem') =>
      fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: fn,
        args: [alice],
      });
    // Before the fix both reported the whole position, and withdraw(max) reverted.
    expect(await max('maxWithdraw')).toBe(0n);
    expect(await max('maxRedeem')).toBe(0n);
    // What the health endpoint's notes are built from.
    expect(await readExitStatus(fx.client, { engine })).toMatchObject({
      async: false,
      limited: true,
    });
    await expect(
      engineWrite(fx, engine, alice, {
        fn: 'redeem',
        args: [(await r.balanceOf(alice)) / 10n, alice, alice],
      }),
    ).rejects.toThrow();
    // A donation of the asset is idle: that much can leave, and exactly that.
    await send(
      fx,
      bob,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'transfer', args: [engine, 100n * USD] }),
    );
    expect(await max('maxWithdraw')).toBe(100n * USD);
    await engineWrite(fx, engine, alice, { fn: 'withdraw', args: [100n * USD, alice, alice] });
    expect(await max('maxWithdraw')).toBe(0n);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'withdraw', args: [1n, alice, alice] }),
    ).rejects.toThrow();
    await haltExits(fx.syncVault, false);
    expect(await readExitStatus(fx.client, { engine })).toMatchObject({ limited: false });
    const all = await max('maxRedeem');
    expect(all).toBe(await r.balanceOf(alice));
    await engineWrite(fx, engine, alice, { fn: 'redeem', args: [all, alice, alice] });
    expect(await r.balanceOf(alice)).toBe(0n);
  });
});

describe('finding 3: a claim is settled by exactly its own underlying request', () => {
  it('donations between request and claim go to the pool, a loss to the claim; no shortfall is hidden', async () => {
    const engine = await newEngine(fx, fx.asyncVault);
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [10_558_279n * USD, alice] });
    await engineWrite(fx, engine, bob, { fn: 'deposit', args: [1_000_000n * USD, bob] });
    await warp(fx, 3600);
    const { preview: requestId } = await engineWrite(fx, engine, alice, {
      fn: 'requestRedeem',
      args: [await r.balanceOf(alice), alice, alice],
    });
    const request = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'redeemRequest',
      args: [requestId],
    });
    // Donations to the engine: underlying shares (bought by mallory) and the asset itself.
    await send(
      fx,
      mallory,
      fx.asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'approve',
        args: [fx.asyncVault, 1_000_000n * USD],
      }),
    );
    await send(
      fx,
      mallory,
      fx.asyncVault,
      encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'deposit',
        args: [1_000_000n * USD, engine],
      }),
    );
    await send(
      fx,
      mallory,
      fx.asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'transfer',
        args: [engine, 5_000n * USD],
      }),
    );
    // The underlying takes a 1 % loss.
    const vaultAssets = await read<bigint>(fx.asyncVault, yieldVaultAbi, 'totalAssets');
    await vaultCall(
      fx.asyncVault,
      encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'realizeLoss',
        args: [vaultAssets / 100n],
      }),
    );
    await warp(fx, 86_400 + 1);
    // Exits halted upstream: the claim waits (reverts) rather than paying from the pool.
    await haltExits(fx.asyncVault, true);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'claimRedeem', args: [requestId, alice] }),
    ).rejects.toThrow();
    await haltExits(fx.asyncVault, false);
    await fx.rpc('evm_setNextBlockTimestamp', [fx.now]);
    const owed = await fx.client.readContract({
      address: fx.asyncVault,
      abi: yieldVaultAbi,
      functionName: 'convertToAssets',
      args: [request.underlyingShares],
      blockTag: 'pending',
    });
    const bobValue = await r.convertToAssets(await r.balanceOf(bob));
    const before = await assetBalance(fx, alice);
    const { receipt } = await engineWrite(fx, engine, alice, {
      fn: 'claimRedeem',
      args: [requestId, alice],
    });
    const paid = (await assetBalance(fx, alice)) - before;
    // Exactly the underlying request's value at the claim block: before the fix the engine paid
    // the engine-share value (boosted by the donations) out of the other holders' assets.
    expect(paid).toBe(owed);
    const withdraw = engineEvents(receipt, engine).find((e) => e.eventName === 'Withdraw');
    if (withdraw?.eventName !== 'Withdraw') throw new Error('no Withdraw');
    expect(withdraw.args.assets).toBe(paid);
    expect(withdraw.args.shares).toBe(request.shares);
    // Bob keeps (at least) his value, donations included; the claim took nothing from him.
    expect(await r.convertToAssets(await r.balanceOf(bob))).toBeGreaterThanOrEqual(bobValue);
    expect(await r.get('pendingUnderlyingShares')).toBe(0n);
    const bobShares = await r.balanceOf(bob);
    await fx.rpc('evm_setNextBlockTimestamp', [fx.now]);
    // Bob can still leave in full: through a request, his share of the donated idle asset by redeem.
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'maxWithdraw',
        args: [bob],
      }),
    ).toBe(5_000n * USD);
    expect(bobShares).toBeGreaterThan(0n);
  });
});

describe('found by the property fuzz (engine-fuzz.test.ts)', () => {
  it('dust worth less than one underlying share exits an asynchronous engine: claimable at once, paying nothing', async () => {
    const engine = await newEngine(fx, fx.asyncVault);
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [1_000n * USD, alice] });
    await warp(fx, 86_400); // the underlying share is now worth more than one base unit
    // Bob holds shares worth less than one underlying share (as a fee remainder can be).
    await send(
      fx,
      alice,
      engine,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: 'transfer', args: [bob, 500_000n] }),
    );
    // Before the fix requestRedeem reverted (ZeroShares) and maxRedeem was 0: no exit at all.
    const { preview: requestId } = await engineWrite(fx, engine, bob, {
      fn: 'requestRedeem',
      args: [500_000n, bob, bob],
    });
    expect(await r.balanceOf(bob)).toBe(0n);
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'claimableRedeemRequest',
        args: [requestId, bob],
      }),
    ).toBe(500_000n);
    const { receipt } = await engineWrite(fx, engine, bob, {
      fn: 'claimRedeem',
      args: [requestId, bob],
    });
    const withdraw = engineEvents(receipt, engine).find((e) => e.eventName === 'Withdraw');
    if (withdraw?.eventName !== 'Withdraw') throw new Error('no Withdraw');
    expect(withdraw.args).toMatchObject({ assets: 0n, shares: 500_000n });
    expect(await r.get('pendingUnderlyingShares')).toBe(0n);
  });

  it('an accrual leaves nothing to accrue in its block, so a preview read before a call holds', async () => {
    // Before the fix the fee was charged on a gain computed from a rounded-down price, and the
    // gain left above the new mark could still carry a fee of one base unit: a deposit or a
    // withdraw then priced differently from its preview (and withdraw(maxWithdraw) reverted).
    const engine = await newEngine(fx, fx.syncVault, { service: 700, partner: 800 });
    const accrue = encodeFunctionData({ abi: yieldEngineAbi, functionName: 'accrueFees' });
    let residual = 0;
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [123_456_789_012n, alice] });
    for (let i = 0; i < 40; i++) {
      fx.now += 37 + i * 13;
      await send(fx, mallory, engine, accrue);
      const left = await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'pendingFeeShares',
      });
      if (left !== 0n) residual++;
    }
    expect(residual).toBe(0);
  });
});
