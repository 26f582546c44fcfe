/**
 * Issue #28, item 6: the net_apy_for_user of an asynchronous product is what a pool holder earns.
 * On anvil, an engine over the strict ERC-7540 test vault with an open redeem request: the day's
 * snapshot, computed from the real boundary reads, carries the APY of a holder who stayed in the
 * pool, not the APY of the engine's totals (which also count the open request, still following the
 * underlying before its fee is charged at the claim).
 */
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { yieldEngineAbi } from '../../src/chain/generated/index.ts';
import { readVaultTotals } from '../../src/chain/read-vault-totals.ts';
import { apyFromSharePrices, sharePrice } from '../../src/money/index.ts';
import { readBoundaryState } from '../../src/sync/metrics/boundary-reads.ts';
import { computeSnapshot } from '../../src/sync/metrics/compute.ts';
import {
  engineReader,
  engineWrite,
  type Fixture,
  newEngine,
  setupFixture,
  USD,
  USERS,
  warp,
} from '../chain/helpers.ts';

const [alice, bob] = USERS as [Address, Address];
let fx: Fixture;

beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

describe('net_apy_for_user of an asynchronous product', () => {
  it('is the pool holder’s APY while requests are open', async () => {
    const engine = await newEngine(fx, fx.asyncVault, { service: 500, partner: 1_000 });
    const r = engineReader(fx, engine);
    await engineWrite(fx, engine, alice, { fn: 'deposit', args: [10_000n * USD, alice] });
    await engineWrite(fx, engine, bob, { fn: 'deposit', args: [10_000n * USD, bob] });
    await warp(fx, 86_400);
    // Alice waits in a request for longer than the two days measured.
    const shares = await r.balanceOf(alice);
    await engineWrite(fx, engine, alice, { fn: 'requestRedeem', args: [shares, alice, alice] });
    const bobShares = await r.balanceOf(bob);

    const boundary = async () => {
      const block = await fx.client.getBlock();
      const reads = await readBoundaryState(fx.client, {
        engine,
        blockNumber: block.number,
        blockTimestamp: new Date(Number(block.timestamp) * 1000),
        underlyingTotals: readVaultTotals(fx.client, {
          vault: fx.asyncVault,
          blockNumber: block.number,
        }),
      });
      const bobValue = await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'convertToAssets',
        args: [bobShares],
        blockNumber: block.number,
      });
      return { reads, bobValue };
    };
    const noFlows = { deposits: 0n, withdrawals: 0n };
    const d1 = await boundary();
    await warp(fx, 86_400);
    const d2 = await boundary();
    const prev = computeSnapshot('p', '2026-01-01', d1.reads, noFlows, null);
    const cur = computeSnapshot('p', '2026-01-02', d2.reads, noFlows, prev);

    // What Bob, who stayed in the pool, earned over the day, annualised.
    const bobApy = apyFromSharePrices(sharePrice(d1.bobValue, 1n), sharePrice(d2.bobValue, 1n));
    expect(cur.netApyForUser).toBe(bobApy);
    // The totals' APY (open request included) is another figure: it was reported before the fix.
    const totalsApy = apyFromSharePrices(
      sharePrice(prev.engineTotalAssets, prev.engineTotalSupply),
      sharePrice(cur.engineTotalAssets, cur.engineTotalSupply),
    );
    expect(totalsApy).not.toBe(bobApy);
    expect(Number(totalsApy)).toBeGreaterThan(Number(bobApy));
    // The pool figures are stored with the row (migration 0040).
    expect(cur.enginePoolAssets).toBe(d2.reads.enginePoolAssets);
    expect(cur.enginePoolSupply).toBeLessThan(cur.engineTotalSupply);
  });
});
