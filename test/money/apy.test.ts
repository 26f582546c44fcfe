import { describe, expect, it } from 'vitest';
import { apyFromSharePrices, type SharePrice, sharePrice } from '../../src/money/index.ts';
import { D, oracleApy, randomBits, randomInt, rng } from './oracle.ts';

const pps = (assets: bigint, supply: bigint): SharePrice => ({ assets, supply });
const ONE = pps(1n, 1n);
const TWO_256 = 2n ** 256n;

/** 1 + f (f a decimal string) as an exact share price, for the days = 365 identity cases. */
function growth(f: string): SharePrice {
  const [i = '', frac = ''] = f.replace('-', '').split('.');
  const scale = 10n ** BigInt(frac.length);
  const mag = BigInt(i + frac);
  return pps(f.startsWith('-') ? scale - mag : scale + mag, scale);
}

describe('apyFromSharePrices: known values', () => {
  it('pps ratio 1.0001 daily -> 0.037172 (1.0001^365 = 1.03717241..., checked below)', () => {
    expect(apyFromSharePrices(pps(10_000n, 10_000n), pps(10_001n, 10_000n))).toBe('0.037172');
    // Independent check of the digits with exact bigint arithmetic: 1.0001^365 = 10001^365 / 10^1460.
    const x = 10001n ** 365n;
    const scale = 10n ** 1460n;
    const micro = ((x - scale) * 10n ** 7n) / scale; // 7 places, truncated
    expect(micro).toBe(371724n); // 0.0371724...: 7th digit 4 -> rounds to 0.037172
    expect(oracleApy(pps(10_000n, 10_000n), pps(10_001n, 10_000n))).toBe('0.037172');
  });

  it('pps ratio 1/1.0001 -> -0.035840 (negative APY)', () => {
    expect(apyFromSharePrices(pps(10_001n, 10_000n), pps(10_000n, 10_000n))).toBe('-0.035840');
    expect(oracleApy(pps(10_001n, 10_000n), pps(10_000n, 10_000n))).toBe('-0.035840');
  });

  it('unchanged pps -> "0.000000"', () => {
    expect(apyFromSharePrices(ONE, ONE)).toBe('0.000000');
    expect(apyFromSharePrices(pps(123n, 456n), pps(246n, 912n))).toBe('0.000000');
  });

  it('doubling over 365 days -> "1.000000"; halving -> "-0.500000"', () => {
    expect(apyFromSharePrices(ONE, pps(2n, 1n), 365)).toBe('1.000000');
    expect(apyFromSharePrices(ONE, pps(1n, 2n), 365)).toBe('-0.500000');
  });

  it('total loss is -1, not null, once the price is still defined', () => {
    // assets fell to 1 wei over 10^30 supply: effectively -100%
    expect(apyFromSharePrices(pps(10n ** 30n, 10n ** 30n), pps(1n, 10n ** 30n))).toBe('-1.000000');
  });

  it('huge growth is written in full (no exponent form)', () => {
    const s = apyFromSharePrices(ONE, pps(2n, 1n));
    expect(s).toBe(`${2n ** 365n - 1n}.000000`);
  });

  it('is independent of absolute scale (decimals cancel)', () => {
    const a = apyFromSharePrices(pps(10n ** 6n, 10n ** 6n), pps(1_000_150n, 10n ** 6n));
    const b = apyFromSharePrices(
      pps(10n ** 24n, 10n ** 18n),
      pps(1_000_150n * 10n ** 18n, 10n ** 18n),
    );
    expect(a).toBe(b);
    expect(a).toBe(oracleApy(pps(10n ** 6n, 10n ** 6n), pps(1_000_150n, 10n ** 6n)));
  });

  it('a 7-day gap annualises with 365/7', () => {
    expect(apyFromSharePrices(ONE, pps(10_007n, 10_000n), 7)).toBe(
      oracleApy(ONE, pps(10_007n, 10_000n), 7),
    );
    expect(apyFromSharePrices(ONE, pps(10_007n, 10_000n), 7)).toBe('0.037161');
  });

  it('always has exactly 6 fractional digits', () => {
    for (const s of [
      apyFromSharePrices(ONE, ONE),
      apyFromSharePrices(ONE, pps(2n, 1n), 365),
      apyFromSharePrices(pps(10_001n, 10_000n), ONE),
    ]) {
      expect(s).toMatch(/^-?[0-9]+\.[0-9]{6}$/);
    }
  });
});

describe('apyFromSharePrices: rounding half away from zero at the 7th place', () => {
  // With days = 365 the APY is exactly ratio − 1, so exact half-way points are reachable.
  it.each([
    ['0.0612345', '0.061235'],
    ['0.06123449999999', '0.061234'],
    ['0.06123450000001', '0.061235'],
    ['0.0000005', '0.000001'],
    ['0.0000004999', '0.000000'],
    ['-0.0000005', '-0.000001'],
    ['-0.0000004999', '0.000000'], // never "-0.000000"
    ['-0.0000001', '0.000000'],
    ['-0.0612345', '-0.061235'],
    ['-0.06123449999999', '-0.061234'],
    ['-0.06123450000001', '-0.061235'],
    ['0.9999995', '1.000000'],
    ['-0.9999995', '-1.000000'],
    ['-0.9999994', '-0.999999'],
  ])('APY %s -> %s', (f, want) => {
    expect(apyFromSharePrices(ONE, growth(f), 365)).toBe(want);
  });

  it('decides within ~4e-58 of a half-way point for a daily ratio (far beyond 1e-18)', () => {
    // r = 1.0612345^(1/365) to 120 digits; truncating / rounding up at 60 places puts r^365 just
    // below / above the boundary 1.0612345.
    const root = new D('1.0612345').pow(new D(1).div(365));
    const s = 10n ** 60n;
    const lo = BigInt(root.mul(s.toString()).toFixed(0, D.ROUND_DOWN));
    const hi = lo + 1n;
    // exact confirmation of which side of the boundary each lands on: (x/10^60)^365 vs 10612345/10^7
    const boundaryNum = 10_612_345n * 10n ** (60n * 365n - 7n);
    expect(lo ** 365n < boundaryNum).toBe(true);
    expect(hi ** 365n > boundaryNum).toBe(true);
    expect(apyFromSharePrices(pps(s, s), pps(lo, s))).toBe('0.061234');
    expect(apyFromSharePrices(pps(s, s), pps(hi, s))).toBe('0.061235');
    // also as a share price with a non-power-of-ten supply
    expect(apyFromSharePrices(pps(3n * s, 3n), pps(lo * 7n, 7n))).toBe('0.061234');
  });

  it('same near-boundary exactness for a negative APY', () => {
    const root = new D('0.9387655').pow(new D(1).div(365)); // boundary of -0.0612345
    const s = 10n ** 60n;
    const lo = BigInt(root.mul(s.toString()).toFixed(0, D.ROUND_DOWN));
    const boundaryNum = 9_387_655n * 10n ** (60n * 365n - 7n);
    expect(lo ** 365n < boundaryNum).toBe(true);
    expect(apyFromSharePrices(pps(s, s), pps(lo, s))).toBe('-0.061235');
    expect(apyFromSharePrices(pps(s, s), pps(lo + 1n, s))).toBe('-0.061234');
  });
});

describe('apyFromSharePrices: no price', () => {
  it.each([
    [pps(0n, 0n), ONE],
    [pps(0n, 1n), ONE],
    [pps(1n, 0n), ONE],
    [ONE, pps(0n, 0n)],
    [ONE, pps(0n, 1n)],
    [ONE, pps(1n, 0n)],
  ])('%o -> %o is null', (prev, cur) => {
    expect(apyFromSharePrices(prev, cur)).toBeNull();
  });
});

describe('apyFromSharePrices: invalid input', () => {
  it.each([0, -1, 1.5, Number.NaN])('rejects days = %s', (days) => {
    expect(() => apyFromSharePrices(ONE, ONE, days)).toThrow(RangeError);
  });

  it('rejects negative components', () => {
    expect(() => apyFromSharePrices(pps(-1n, 1n), ONE)).toThrow(RangeError);
    expect(() => apyFromSharePrices(ONE, pps(1n, -1n))).toThrow(RangeError);
    expect(() => sharePrice(-1n, 1n)).toThrow(RangeError);
    expect(sharePrice(5n, 7n)).toEqual({ assets: 5n, supply: 7n });
  });
});

describe('apyFromSharePrices: extreme and random values', () => {
  it('handles 2^256-sized reads quickly and exactly', () => {
    const prev = pps(TWO_256 - 1n, TWO_256 - 3n);
    const cur = pps(TWO_256 - 1n + (TWO_256 >> 20n), TWO_256 - 3n);
    const t = performance.now();
    const got = apyFromSharePrices(prev, cur);
    expect(performance.now() - t).toBeLessThan(2000);
    expect(got).toBe(oracleApy(prev, cur));
  });

  it.each([1, 2, 7, 30, 180, 364, 365, 366, 1000])('2^256-sized reads over %i days', (days) => {
    const prev = pps(TWO_256 - 1n, TWO_256 - 3n);
    const cur = pps(TWO_256 - 1n + (TWO_256 >> 10n), TWO_256 - 5n);
    expect(apyFromSharePrices(prev, cur, days)).toBe(oracleApy(prev, cur, days));
  });

  it('matches a 120-digit decimal.js reference over 400 seeded realistic daily moves', () => {
    const next = rng(0xa9a9n);
    for (let i = 0; i < 400; i++) {
      // realistic vaults: supply of 60..120 bits, pps within a factor of 2 of some power of ten
      const big = () => {
        const bits = randomInt(next, 60, 120);
        return randomBits(next, bits) | (1n << BigInt(bits - 1));
      };
      const supply = big();
      const unit = 10n ** BigInt(randomInt(next, 0, 12));
      const assets = (supply * unit * BigInt(randomInt(next, 500_000, 2_000_000))) / 1_000_000n;
      // daily move within about ±0.5%, in 1e-12 steps, on a fresh supply
      const move = 10n ** 12n + BigInt(randomInt(next, -5_000_000_000, 5_000_000_000));
      const cs = big();
      const ca = (assets * cs * move) / (supply * 10n ** 12n);
      const prev = pps(assets, supply);
      const cur = pps(ca, cs);
      const days = [1, 1, 1, 2, 7, 30][randomInt(next, 0, 5)]!;
      expect(apyFromSharePrices(prev, cur, days), `${i}`).toBe(oracleApy(prev, cur, days));
    }
  });
});
