/**
 * Engine scenarios on a real anvil: fee on yield only with an exact split, high-water mark, fee
 * changes, pause and deprecation, the donation attack, asynchronous redeem.
 */
import { encodeFunctionData } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testUSDAbi, yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
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
  setRate,
  setupFixture,
  USD,
  USERS,
  warp,
} from './helpers.ts';

const [alice, bob, carol] = USERS as [`0x${string}`, `0x${string}`, `0x${string}`];
let fx: Fixture;

beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

const op = (engine: `0x${string}`, fn: 'pause' | 'unpause' | 'deprecate' | 'accrueFees') =>
  send(fx, OPERATOR, engine, encodeFunctionData({ abi: yieldEngineAbi, functionName: fn }));

describe('YieldEngine fees', () => {
  it('charges service + partner bps on yield, minted as shares and split exactly', async () => {
    const engine = await newEngine(fx, fx.syncVault, { service: 500, partner: 1000 });
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [100_000n * USD, alice] });
    const before = await r.get('totalAssets');
    await warp(fx, 30 * 86_400);
    const pending = await r.atNextBlock('pendingFeeShares');
    expect(pending).toBeGreaterThan(0n);
    const { receipt } = await engineWrite(fx, engine, bob, {
      fn: 'deposit',
      args: [1n * USD, bob],
    });
    const fee = engineEvents(receipt, engine).find((e) => e.eventName === 'FeesAccrued');
    if (fee?.eventName !== 'FeesAccrued') throw new Error('no FeesAccrued');
    const { serviceShares, partnerShares, serviceAssets, partnerAssets } = fee.args;
    expect(serviceShares + partnerShares).toBe(pending); // the preview of the fee was exact
    expect(serviceShares).toBe((pending * 500n) / 1500n); // remainder goes to the partner
    expect(await r.balanceOf(SERVICE)).toBe(serviceShares);
    expect(await r.balanceOf(PARTNER)).toBe(partnerShares);
    // 15 % of the yield, within rounding.
    const yieldAssets = (await r.get('totalAssets')) - 1n * USD - before;
    const feeAssets = serviceAssets + partnerAssets;
    expect(feeAssets * 10_000n).toBeGreaterThanOrEqual(yieldAssets * 1500n - 10_000n * 2n);
    expect(feeAssets * 10_000n).toBeLessThanOrEqual(yieldAssets * 1500n + 10_000n * 2n);
    expect(await r.get('serviceFeeSharesTotal')).toBe(serviceShares);
    expect(await r.get('partnerFeeAssetsTotal')).toBe(partnerAssets);
  });

  it('pendingFees() is the asset value the next accrual charges, split as it splits it', async () => {
    const engine = await newEngine(fx, fx.syncVault, { service: 700, partner: 800 });
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [25_000n * USD, alice] });
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'pendingFees',
      }),
    ).toEqual([0n, 0n]);
    await warp(fx, 20 * 86_400);
    await fx.rpc('evm_setNextBlockTimestamp', [fx.now]);
    const [service, partner] = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'pendingFees',
      blockTag: 'pending',
    });
    expect(service + partner).toBeGreaterThan(0n);
    expect(service).toBe(((service + partner) * 700n) / 1500n);
    const receipt = await op(engine, 'accrueFees'); // mined at the timestamp read above
    const fee = engineEvents(receipt, engine).find((e) => e.eventName === 'FeesAccrued');
    if (fee?.eventName !== 'FeesAccrued') throw new Error('no FeesAccrued');
    expect(fee.args.serviceAssets).toBe(service);
    expect(fee.args.partnerAssets).toBe(partner);
    expect(await r.get('serviceFeeAssetsTotal')).toBe(service);
    expect(await r.get('partnerFeeAssetsTotal')).toBe(partner);
  });

  it('charges nothing on a loss nor on a recovery below the high-water mark', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [50_000n * USD, alice] });
    await op(engine, 'accrueFees');
    const mark = await r.get('highWaterMark');
    const vaultAssets = await fx.client.readContract({
      address: fx.syncVault,
      abi: yieldVaultAbi,
      functionName: 'totalAssets',
    });
    await send(
      fx,
      OPERATOR,
      fx.syncVault,
      encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'realizeLoss',
        args: [vaultAssets / 50n],
      }),
    );
    await warp(fx, 86_400); // a day of yield: still well below the mark after a 2 % loss
    expect(await r.get('pendingFeeShares')).toBe(0n);
    const supply = await r.get('totalSupply');
    await op(engine, 'accrueFees');
    expect(await r.get('totalSupply')).toBe(supply);
    expect(await r.get('highWaterMark')).toBe(mark);
  });

  it('applies a fee increase only after its notice, to yield after it; a decrease at once', async () => {
    const engine = await newEngine(fx, fx.syncVault, { service: 500, partner: 500 });
    const r = engineReader(fx, engine);
    const read = <F extends 'serviceFeeBps' | 'partnerFeeBps' | 'feeChangeEffectiveAt'>(
      functionName: F,
    ) => fx.client.readContract({ address: engine, abi: yieldEngineAbi, functionName });
    const setFees = (from: `0x${string}`, s: number, p: number) =>
      send(
        fx,
        from,
        engine,
        encodeFunctionData({ abi: yieldEngineAbi, functionName: 'setFees', args: [s, p] }),
      );
    const apply = () =>
      send(
        fx,
        carol,
        engine,
        encodeFunctionData({ abi: yieldEngineAbi, functionName: 'applyFeeChange' }),
      );
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'feeChangeDelay',
      }),
    ).toBe(7n * 86_400n);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [10_000n * USD, alice] });
    await warp(fx, 10 * 86_400);
    // An increase is only scheduled: the fees in force stay, and nothing is accrued.
    const scheduledAt = fx.now;
    const scheduled = await setFees(OPERATOR, 1000, 2000);
    const events = engineEvents(scheduled, engine);
    expect(events.map((e) => e.eventName)).toEqual(['FeeChangeScheduled']);
    const ev = events[0]!;
    if (ev.eventName !== 'FeeChangeScheduled') throw new Error('unreachable');
    expect(ev.args).toEqual({
      serviceFeeBps: 1000,
      partnerFeeBps: 2000,
      effectiveAt: BigInt(scheduledAt + 7 * 86_400),
    });
    expect([await read('serviceFeeBps'), await read('partnerFeeBps')]).toEqual([500, 500]);
    expect(await read('feeChangeEffectiveAt')).toBe(BigInt(scheduledAt + 7 * 86_400));
    await expect(apply()).rejects.toThrow(); // not due
    await warp(fx, 7 * 86_400 - 10);
    await expect(apply()).rejects.toThrow(); // still not due
    await warp(fx, 10);
    // Applying charges the yield so far at the old rates, then the new rates are in force.
    const pendingAtOldRate = await r.atNextBlock('pendingFeeShares');
    const applied = await apply();
    const names = engineEvents(applied, engine).map((e) => e.eventName);
    expect(names).toEqual(['Transfer', 'Transfer', 'FeesAccrued', 'FeesUpdated']);
    const fee = engineEvents(applied, engine).find((e) => e.eventName === 'FeesAccrued');
    if (fee?.eventName !== 'FeesAccrued') throw new Error('no FeesAccrued');
    expect(fee.args.serviceShares + fee.args.partnerShares).toBe(pendingAtOldRate);
    expect(await r.get('pendingFeeShares')).toBe(0n);
    expect([await read('serviceFeeBps'), await read('partnerFeeBps')]).toEqual([1000, 2000]);
    expect(await read('feeChangeEffectiveAt')).toBe(0n);
    await expect(apply()).rejects.toThrow(); // nothing scheduled
    // A decrease applies at once.
    const lowered = await setFees(OPERATOR, 1000, 1000);
    expect(engineEvents(lowered, engine).map((e) => e.eventName)).toContain('FeesUpdated');
    expect(await read('partnerFeeBps')).toBe(1000);
    // A change that raises either fee is an increase, even if the total falls.
    await setFees(OPERATOR, 1500, 0);
    expect([await read('serviceFeeBps'), await read('partnerFeeBps')]).toEqual([1000, 1000]);
    // Cancelled by the owner; a decrease also replaces a scheduled increase.
    await send(
      fx,
      OPERATOR,
      engine,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: 'cancelFeeChange' }),
    );
    expect(await read('feeChangeEffectiveAt')).toBe(0n);
    await expect(setFees(OPERATOR, 3000, 2001)).rejects.toThrow(); // over 50 %
    await expect(setFees(alice, 0, 0)).rejects.toThrow(); // not the owner
  });
});

describe('YieldEngine ownership', () => {
  it('moves in two steps and cannot be renounced', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const call = (from: `0x${string}`, data: `0x${string}`) => send(fx, from, engine, data);
    const owner = () =>
      fx.client.readContract({ address: engine, abi: yieldEngineAbi, functionName: 'owner' });
    await expect(
      call(
        OPERATOR,
        encodeFunctionData({ abi: yieldEngineAbi, functionName: 'renounceOwnership' }),
      ),
    ).rejects.toThrow();
    await call(
      OPERATOR,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: 'transferOwnership', args: [bob] }),
    );
    expect(await owner()).toBe(OPERATOR); // not until accepted
    await expect(
      call(carol, encodeFunctionData({ abi: yieldEngineAbi, functionName: 'acceptOwnership' })),
    ).rejects.toThrow();
    await call(bob, encodeFunctionData({ abi: yieldEngineAbi, functionName: 'acceptOwnership' }));
    expect(await owner()).toBe(bob);
    await expect(op(engine, 'pause')).rejects.toThrow(); // the old operator lost its rights
    await call(bob, encodeFunctionData({ abi: yieldEngineAbi, functionName: 'pause' }));
  });
});

describe('YieldEngine pause and deprecation', () => {
  it('pause blocks deposits and mints but not withdrawals or redeems', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [1_000n * USD, alice] });
    await op(engine, 'pause');
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'isPaused',
      }),
    ).toBe(true);
    expect(await r.maxDeposit(alice)).toBe(0n);
    expect(await r.maxMint(alice)).toBe(0n);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'deposit', args: [1n * USD, alice] }),
    ).rejects.toThrow();
    await expect(
      engineWrite(fx, engine, alice, { fn: 'mint', args: [10n ** 12n, alice] }),
    ).rejects.toThrow();
    await engineWrite(fx, engine, alice, { fn: 'withdraw', args: [100n * USD, alice, alice] });
    const shares = await r.balanceOf(alice);
    await engineWrite(fx, engine, alice, { fn: 'redeem', args: [shares, alice, alice] });
    expect(await r.balanceOf(alice)).toBe(0n);
    await op(engine, 'unpause');
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [1n * USD, alice] });
  });

  it('deprecation is one-way and every holder, fee recipients included, can exit', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [20_000n * USD, alice] });
    await engineWrite(fx, engine, bob, { fn: 'deposit', args: [5_000n * USD, bob] });
    await warp(fx, 60 * 86_400);
    await op(engine, 'deprecate');
    await expect(op(engine, 'deprecate')).rejects.toThrow();
    expect(await r.maxDeposit(alice)).toBe(0n);
    await op(engine, 'accrueFees');
    for (const holder of [alice, bob, SERVICE, PARTNER]) {
      const shares = await r.balanceOf(holder);
      expect(shares).toBeGreaterThan(0n);
      await engineWrite(fx, engine, holder, { fn: 'redeem', args: [shares, holder, holder] });
      expect(await r.balanceOf(holder)).toBe(0n);
    }
    // Only the seed shares stay, held by no one.
    const seedHolder = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'SEED_SHARES_HOLDER',
    });
    expect(await r.get('totalSupply')).toBe(await r.balanceOf(seedHolder));
    expect(await r.seedWorth()).toBeGreaterThanOrEqual(await r.seedAssets());
    await expect(
      engineWrite(fx, engine, carol, { fn: 'deposit', args: [1n * USD, carol] }),
    ).rejects.toThrow();
  });

  it('an upstream halt (maxDeposit 0) closes deposits of the engine', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    await send(
      fx,
      OPERATOR,
      fx.syncVault,
      encodeFunctionData({ abi: yieldVaultAbi, functionName: 'setPaused', args: [true] }),
    );
    expect(await engineReader(fx, engine).maxDeposit(alice)).toBe(0n);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'deposit', args: [1n * USD, alice] }),
    ).rejects.toThrow();
    await send(
      fx,
      OPERATOR,
      fx.syncVault,
      encodeFunctionData({ abi: yieldVaultAbi, functionName: 'setPaused', args: [false] }),
    );
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [1n * USD, alice] });
  });
});

describe('YieldEngine inflation defence', () => {
  it('a first depositor who donates cannot steal a later depositor’s funds', async () => {
    const engine = await newEngine(fx, fx.syncVault, { service: 0, partner: 0 });
    const r = engineReader(fx, engine);
    await setRate(fx, fx.syncVault, 0);
    // Attacker: the smallest first deposit (one base unit above the seed), then donate a large
    // amount straight to the engine.
    await engineWrite(fx, engine, alice, {
      fn: 'deposit',
      args: [(await r.seedAssets()) + 1n, alice],
    });
    await send(
      fx,
      alice,
      fx.asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'transfer',
        args: [engine, 10_000n * USD],
      }),
    );
    const victimDeposit = 5_000n * USD;
    const { preview: victimShares } = await engineWrite(fx, engine, bob, {
      fn: 'deposit',
      args: [victimDeposit, bob],
    });
    expect(victimShares).toBeGreaterThan(0n);
    const victimValue = await r.convertToAssets(await r.balanceOf(bob));
    // The victim keeps (almost) everything: the loss is at most a hair of the deposit.
    expect(victimValue).toBeGreaterThanOrEqual((victimDeposit * 9_999n) / 10_000n);
    const attackerValue = await r.convertToAssets(await r.balanceOf(alice));
    expect(attackerValue).toBeLessThan(10_000n * USD + 1n); // no profit from the donation
    await setRate(fx, fx.syncVault, 800);
  });

  it('the first deposit pays the seed: seed shares worth SEED_ASSETS go to SEED_SHARES_HOLDER', async () => {
    const engine = await newEngine(fx, fx.syncVault, { service: 0, partner: 0 });
    const r = engineReader(fx, engine);
    const seed = await r.seedAssets();
    expect(seed).toBe(10_000n);
    // At or below the seed, the first deposit is refused with the minimum in the error.
    const refused = await fx.client
      .simulateContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'deposit',
        args: [seed, alice],
        account: alice,
      })
      .then(
        () => 'accepted',
        (e: unknown) => String(e),
      );
    expect(refused).toMatch(/FirstDepositTooSmall\(uint256 assets, uint256 minimum\)/);
    expect(refused).toContain('10001'); // the minimum, in the error's arguments
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'previewDeposit',
        args: [seed],
      }),
    ).toBe(0n);
    const { preview: shares } = await engineWrite(fx, engine, alice, {
      fn: 'deposit',
      args: [1_000n * USD, alice],
    });
    expect(shares).toBe(await r.balanceOf(alice));
    // Alice holds what she paid less the seed; the seed shares are worth the seed.
    // (convertToAssets rounds down under the virtual offset: one base unit at most.)
    expect(1_000n * USD - seed - (await r.convertToAssets(shares))).toBeLessThanOrEqual(1n);
    expect(seed - (await r.seedWorth())).toBeLessThanOrEqual(1n);
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'seeded',
      }),
    ).toBe(true);
    // Later deposits pay no seed.
    const { preview: bobShares } = await engineWrite(fx, engine, bob, {
      fn: 'deposit',
      args: [1_000n * USD, bob],
    });
    expect(1_000n * USD - (await r.convertToAssets(bobShares))).toBeLessThanOrEqual(1n);
  });

  it('an operator can seed an engine itself with mint(0), paying exactly SEED_ASSETS', async () => {
    const engine = await newEngine(fx, fx.syncVault, { service: 0, partner: 0 });
    const r = engineReader(fx, engine);
    const seed = await r.seedAssets();
    const before = await assetBalance(fx, carol);
    const { preview: paid } = await engineWrite(fx, engine, carol, {
      fn: 'mint',
      args: [0n, carol],
    });
    expect(paid).toBe(seed);
    expect(before - (await assetBalance(fx, carol))).toBe(seed);
    expect(await r.balanceOf(carol)).toBe(0n);
    // The first user then pays nothing for the seed.
    const { preview: shares } = await engineWrite(fx, engine, alice, {
      fn: 'deposit',
      args: [1_000n * USD, alice],
    });
    expect(1_000n * USD - (await r.convertToAssets(shares))).toBeLessThanOrEqual(1n);
  });

  it('a near-empty engine after a large donation: a round trip loses at most donation / (10^6 × seed)', async () => {
    // The audit's case: everyone left, then a large donation made one share worth many base units
    // (15,936 base units lost per round trip before the seed). The seed shares keep the engine from
    // being empty: the donation goes to them, and a share's worth stays small.
    const engine = await newEngine(fx, fx.syncVault, { service: 0, partner: 0 });
    const r = engineReader(fx, engine);
    await setRate(fx, fx.syncVault, 0);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [1_000n * USD, alice] });
    await engineWrite(fx, engine, alice, {
      fn: 'redeem',
      args: [await r.balanceOf(alice), alice, alice],
    });
    const donation = 100_000n * USD;
    await send(
      fx,
      alice,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'transfer', args: [engine, donation] }),
    );
    const bound = donation / (10n ** 6n * (await r.seedAssets())) + 1n;
    let worst = 0n;
    for (const amount of [1n * USD + 7n, 333_333_333n, 12_345_678_901n]) {
      const before = await assetBalance(fx, bob);
      const { preview: shares } = await engineWrite(fx, engine, bob, {
        fn: 'deposit',
        args: [amount, bob],
      });
      await engineWrite(fx, engine, bob, { fn: 'redeem', args: [shares, bob, bob] });
      const loss = before - (await assetBalance(fx, bob));
      if (loss > worst) worst = loss;
    }
    expect(worst).toBeLessThanOrEqual(bound);
    expect(bound).toBeLessThanOrEqual(11n); // 100,000 USD given away for at most 11 base units a round trip
    // The donation went to the seed shares, which no one can redeem (all but the virtual
    // shares' hundredth of a percent).
    expect(await r.seedWorth()).toBeGreaterThanOrEqual((donation * 9_999n) / 10_000n);
    await setRate(fx, fx.syncVault, 800);
  });
});

describe('YieldEngine over an asynchronous vault', () => {
  it('requestRedeem emits RedeemRequested, moves neither totalAssets nor fees; claim emits Withdraw', async () => {
    const engine = await newEngine(fx, fx.asyncVault);
    const r = engineReader(fx, engine);
    expect(
      await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'isAsync',
      }),
    ).toBe(true);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [40_000n * USD, alice] });
    await warp(fx, 5 * 86_400);
    await op(engine, 'accrueFees');
    expect(await r.maxDeposit(alice)).toBeGreaterThan(0n);
    const shares = (await r.balanceOf(alice)) / 2n;
    // Same block: the request changes neither totalAssets nor pending fees.
    const ta = await r.get('totalAssets');
    const fees = await r.get('pendingFeeShares');
    await fx.rpc('evm_setAutomine', [false]);
    const data = encodeFunctionData({
      abi: yieldEngineAbi,
      functionName: 'requestRedeem',
      args: [shares, alice, alice],
    });
    await fx.rpc('eth_sendTransaction', [{ from: alice, to: engine, data, gas: '0x1e8480' }]);
    await fx.rpc('evm_setAutomine', [true]);
    await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
    await fx.rpc('evm_mine', []);
    const req = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'redeemRequest',
      args: [1n],
    });
    expect(req.controller).toBe(alice);
    expect(req.shares).toBe(shares);
    // Mined one second later: compare with what one second of yield alone does.
    expect(await r.get('pendingUnderlyingShares')).toBe(req.underlyingShares);
    const taAfter = await r.get('totalAssets');
    expect(taAfter - ta).toBeLessThan(USD / 100n); // only a second of interest
    expect(taAfter).toBeGreaterThanOrEqual(ta);
    expect(await r.get('pendingFeeShares')).toBeGreaterThanOrEqual(fees);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'redeem', args: [1n, alice, alice] }),
    ).rejects.toThrow();
    // Not claimable before the underlying settles.
    await expect(
      engineWrite(fx, engine, alice, { fn: 'claimRedeem', args: [1n, alice] }),
    ).rejects.toThrow();
    await expect(
      engineWrite(fx, engine, bob, { fn: 'claimRedeem', args: [1n, bob] }),
    ).rejects.toThrow();
    await warp(fx, 86_400 + 60);
    const before = await assetBalance(fx, alice);
    const { preview, receipt } = await engineWrite(fx, engine, alice, {
      fn: 'claimRedeem',
      args: [1n, alice],
    });
    const withdraw = engineEvents(receipt, engine).find((e) => e.eventName === 'Withdraw');
    if (withdraw?.eventName !== 'Withdraw') throw new Error('no Withdraw');
    expect(withdraw.args.shares).toBe(shares);
    expect(withdraw.args.assets).toBe(preview);
    expect((await assetBalance(fx, alice)) - before).toBe(preview);
    expect(await r.get('pendingUnderlyingShares')).toBe(0n);
    await expect(
      engineWrite(fx, engine, alice, { fn: 'claimRedeem', args: [1n, alice] }),
    ).rejects.toThrow();
  });
});
