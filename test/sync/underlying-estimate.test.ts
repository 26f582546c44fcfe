/**
 * The launch-day estimate's arithmetic (src/sync/metrics/underlying-estimate.ts), against decimal.js:
 * the fee is taken from a gain only, a loss is borne whole, no fee gives the underlying's own APY,
 * and an undefined share price gives no estimate.
 */
import { Decimal } from 'decimal.js';
import { describe, expect, it } from 'vitest';
import { estimateFromUnderlying } from '../../src/sync/metrics/underlying-estimate.ts';

const D = Decimal.clone({ precision: 120 });
const apy = (r: Decimal) => {
  const s = r.pow(365).minus(1).toFixed(6, Decimal.ROUND_HALF_UP);
  return s === '-0.000000' ? '0.000000' : s;
};

function reference(a0: bigint, s0: bigint, a1: bigint, s1: bigint, feeBps: number) {
  const ratio = new D(a1.toString())
    .div(s1.toString())
    .div(new D(a0.toString()).div(s0.toString()));
  const net = ratio.gt(1)
    ? ratio
        .minus(1)
        .mul(new D(10_000 - feeBps).div(10_000))
        .plus(1)
    : ratio;
  return { underlyingApy: apy(ratio), netApyForUser: apy(net) };
}

describe('launch-day estimate from the underlying', () => {
  it.each([
    [
      'a gain, 15 % fee',
      1_000_000_000_000n,
      990_000_000_000n,
      1_000_140_000_000n,
      990_000_000_000n,
      1500,
    ],
    ['a gain, 50 % fee', 5_000_000n, 4_000_000n, 5_000_700n, 4_000_000n, 5000],
    ['a gain with new shares', 1_000_000n, 1_000_000n, 2_000_300n, 2_000_000n, 1200],
    ['a loss (no fee taken)', 1_000_000_000n, 1_000_000_000n, 996_000_000n, 1_000_000_000n, 1500],
    ['no change', 7n, 3n, 7n, 3n, 1500],
  ])('%s', (_name, a0, s0, a1, s1, fee) => {
    expect(
      estimateFromUnderlying(
        { totalAssets: a0, totalSupply: s0 },
        { totalAssets: a1, totalSupply: s1 },
        fee,
      ),
    ).toEqual(reference(a0, s0, a1, s1, fee));
  });

  it('without a fee the net APY is the underlying APY; a loss is the same both ways', () => {
    const gain = estimateFromUnderlying(
      { totalAssets: 1_000_000n, totalSupply: 1_000_000n },
      { totalAssets: 1_000_150n, totalSupply: 1_000_000n },
      0,
    );
    expect(gain?.netApyForUser).toBe(gain?.underlyingApy);
    const loss = estimateFromUnderlying(
      { totalAssets: 1_000_000n, totalSupply: 1_000_000n },
      { totalAssets: 999_000n, totalSupply: 1_000_000n },
      2000,
    );
    expect(loss?.netApyForUser).toBe(loss?.underlyingApy);
    expect(Number(loss?.underlyingApy)).toBeLessThan(0);
  });

  it('no estimate without both share prices; a fee out of range is refused', () => {
    const some = { totalAssets: 5n, totalSupply: 5n };
    expect(estimateFromUnderlying({ totalAssets: 0n, totalSupply: 0n }, some, 1500)).toBeNull();
    expect(estimateFromUnderlying(some, { totalAssets: 5n, totalSupply: 0n }, 1500)).toBeNull();
    expect(() => estimateFromUnderlying(some, some, 10_001)).toThrow(RangeError);
    expect(() => estimateFromUnderlying(some, some, 1.5)).toThrow(RangeError);
  });
});
