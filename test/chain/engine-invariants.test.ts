/**
 * Randomized, seeded sequences of hundreds of operations across several wallets, checking after each
 * step: previews equal the real calls, totalAssets = idle + value of held and pending underlying
 * shares, sum of balances = totalSupply, the fee split is exact and the high-water mark never falls,
 * and a deposit redeemed in the same block never returns more than was put in.
 */
import { type Address, encodeFunctionData, type Hash, type TransactionReceipt } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
import { createPrng, type Prng } from '../../src/chain/local/prng.ts';
import {
  assetBalance,
  engineEvents,
  engineReader,
  engineWrite,
  type Fixture,
  mineBlock,
  newEngine,
  OPERATOR,
  PARTNER,
  SERVICE,
  send,
  setRate,
  setupFixture,
  USD,
  USERS,
  warp,
} from './helpers.ts';

const WALLETS = USERS.slice(0, 6);
let fx: Fixture;

beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

async function checkAccounting(engine: Address, underlying: Address): Promise<void> {
  const r = engineReader(fx, engine);
  const [ta, idle, held, pending, supply] = await Promise.all([
    r.get('totalAssets'),
    r.get('idleAssets'),
    r.get('heldUnderlyingShares'),
    r.get('pendingUnderlyingShares'),
    r.get('totalSupply'),
  ]);
  const value = await fx.client.readContract({
    address: underlying,
    abi: yieldVaultAbi,
    functionName: 'convertToAssets',
    args: [held + pending],
  });
  expect(ta).toBe(idle + value);
  const holders = [...WALLETS, SERVICE, PARTNER, engine];
  const balances = await Promise.all(holders.map((h) => r.balanceOf(h)));
  expect(balances.reduce((a, b) => a + b, 0n)).toBe(supply);
}

function checkFees(
  receipt: TransactionReceipt,
  engine: Address,
  bps: { s: bigint; p: bigint },
): void {
  for (const e of engineEvents(receipt, engine)) {
    if (e.eventName !== 'FeesAccrued') continue;
    const total = e.args.serviceShares + e.args.partnerShares;
    expect(e.args.serviceShares).toBe((total * bps.s) / (bps.s + bps.p));
    const assets = e.args.serviceAssets + e.args.partnerAssets;
    expect(e.args.serviceAssets).toBe((assets * bps.s) / (bps.s + bps.p));
  }
}

function eventAmount(
  receipt: TransactionReceipt,
  engine: Address,
  name: 'Deposit' | 'Withdraw',
  field: 'assets' | 'shares',
): bigint {
  const e = engineEvents(receipt, engine).find((x) => x.eventName === name);
  if (!e || (e.eventName !== 'Deposit' && e.eventName !== 'Withdraw'))
    throw new Error(`no ${name} log`);
  return e.args[field];
}

/** Deposit and immediate redeem in one block: the wallet never gets back more than it put in. */
async function roundTrip(engine: Address, wallet: Address, assets: bigint): Promise<void> {
  const before = await assetBalance(fx, wallet);
  await fx.rpc('evm_setNextBlockTimestamp', [fx.now]);
  const shares = await fx.client.readContract({
    address: engine,
    abi: yieldEngineAbi,
    functionName: 'previewDeposit',
    args: [assets],
    blockTag: 'pending',
  });
  const gas = '0x2dc6c0';
  const hashes: Hash[] = [];
  for (const data of [
    encodeFunctionData({ abi: yieldEngineAbi, functionName: 'deposit', args: [assets, wallet] }),
    encodeFunctionData({
      abi: yieldEngineAbi,
      functionName: 'redeem',
      args: [shares, wallet, wallet],
    }),
  ]) {
    hashes.push(
      (await fx.rpc('eth_sendTransaction', [{ from: wallet, to: engine, data, gas }])) as Hash,
    );
  }
  await mineBlock(fx);
  for (const hash of hashes)
    expect((await fx.client.getTransactionReceipt({ hash })).status).toBe('success');
  expect(await assetBalance(fx, wallet)).toBeLessThanOrEqual(before);
}

async function randomStep(
  prng: Prng,
  engine: Address,
  underlying: Address,
  isAsync: boolean,
  requests: { id: bigint; controller: Address; at: number }[],
): Promise<TransactionReceipt | undefined> {
  const r = engineReader(fx, engine);
  const wallet = prng.pick(WALLETS);
  const roll = prng.int(0, 99);
  if (roll < 10) {
    await warp(fx, prng.int(60, 3 * 86_400));
    return undefined;
  }
  if (roll < 13) {
    await setRate(fx, underlying, prng.int(0, 2000));
    return undefined;
  }
  if (roll < 14) {
    const total = await fx.client.readContract({
      address: underlying,
      abi: yieldVaultAbi,
      functionName: 'totalAssets',
    });
    await send(
      fx,
      OPERATOR,
      underlying,
      encodeFunctionData({ abi: yieldVaultAbi, functionName: 'realizeLoss', args: [total / 200n] }),
    );
    return undefined;
  }
  if (roll < 18 && !isAsync) {
    await roundTrip(engine, wallet, prng.bigint(1n, 50_000n * USD));
    return undefined;
  }
  if (roll < 45) {
    const assets = prng.chance(0.1) ? prng.bigint(1n, 1000n) : prng.bigint(1n, 200_000n * USD);
    const { preview, receipt } = await engineWrite(fx, engine, wallet, {
      fn: 'deposit',
      args: [assets, wallet],
    });
    expect(eventAmount(receipt, engine, 'Deposit', 'shares')).toBe(preview);
    return receipt;
  }
  if (roll < 55) {
    const shares = prng.bigint(1n, 100_000n * 10n ** 12n);
    const { preview, receipt } = await engineWrite(fx, engine, wallet, {
      fn: 'mint',
      args: [shares, wallet],
    });
    expect(eventAmount(receipt, engine, 'Deposit', 'assets')).toBe(preview);
    return receipt;
  }
  const balance = await r.balanceOf(wallet);
  if (balance === 0n) return undefined;
  if (isAsync) {
    const due = requests.find((q) => q.at <= fx.now && q.controller === wallet);
    if (due && prng.chance(0.6)) {
      requests.splice(requests.indexOf(due), 1);
      const { preview, receipt } = await engineWrite(fx, engine, wallet, {
        fn: 'claimRedeem',
        args: [due.id, wallet],
      });
      expect(eventAmount(receipt, engine, 'Withdraw', 'assets')).toBe(preview);
      return receipt;
    }
    const shares = prng.chance(0.2) ? balance : prng.bigint(1n, balance);
    const { preview: id, receipt } = await engineWrite(fx, engine, wallet, {
      fn: 'requestRedeem',
      args: [shares, wallet, wallet],
    });
    requests.push({ id, controller: wallet, at: fx.now + 86_400 + 60 });
    return receipt;
  }
  if (prng.chance(0.5)) {
    const shares = prng.chance(0.2) ? balance : prng.bigint(1n, balance);
    const { preview, receipt } = await engineWrite(fx, engine, wallet, {
      fn: 'redeem',
      args: [shares, wallet, wallet],
    });
    expect(eventAmount(receipt, engine, 'Withdraw', 'assets')).toBe(preview);
    return receipt;
  }
  const max = await fx.client.readContract({
    address: engine,
    abi: yieldEngineAbi,
    functionName: 'maxWithdraw',
    args: [wallet],
  });
  if (max === 0n) return undefined;
  const assets = prng.bigint(1n, max);
  const { preview, receipt } = await engineWrite(fx, engine, wallet, {
    fn: 'withdraw',
    args: [assets, wallet, wallet],
  });
  expect(eventAmount(receipt, engine, 'Withdraw', 'shares')).toBe(preview);
  return receipt;
}

async function runSequence(
  seed: string,
  underlying: Address,
  isAsync: boolean,
  steps: number,
): Promise<void> {
  const prng = createPrng(seed);
  const bps = { s: 300n, p: 700n };
  const engine = await newEngine(fx, underlying, { service: 300, partner: 700 });
  const r = engineReader(fx, engine);
  const requests: { id: bigint; controller: Address; at: number }[] = [];
  let mark = await r.get('highWaterMark');
  for (let i = 0; i < steps; i++) {
    const receipt = await randomStep(prng, engine, underlying, isAsync, requests);
    if (receipt) checkFees(receipt, engine, bps);
    await checkAccounting(engine, underlying);
    const next = await r.get('highWaterMark');
    expect(next).toBeGreaterThanOrEqual(mark);
    mark = next;
  }
  await setRate(fx, underlying, 800);
}

describe('engine invariants under random operation sequences', () => {
  it('sync underlying: 300 seeded operations across 6 wallets', async () => {
    await runSequence('invariants-sync', fx.syncVault, false, 300);
  });

  it('async underlying: 200 seeded operations across 6 wallets', async () => {
    await runSequence('invariants-async', fx.asyncVault, true, 200);
  });
});
