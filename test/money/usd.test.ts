import { describe, expect, it } from 'vitest';
import { usdValue } from '../../src/money/index.ts';
import { D, randomBits, randomInt, rng, truncTrim } from './oracle.ts';

describe('usdValue', () => {
  it.each([
    [1_250_500_000n, 6, '1', '1250.5'],
    [1_250_000_000n, 6, '1', '1250'],
    [1_250_500_000n, 6, '0.9999', '1250.37'], // 1250.37495 -> toward zero
    [0n, 6, '1', '0'],
    [1n, 6, '1', '0'], // one base unit is below a cent
    [9_999n, 6, '1', '0'], // 0.009999
    [10_000n, 6, '1', '0.01'],
    [19_999n, 6, '1', '0.01'],
    [-19_999n, 6, '1', '-0.01'], // toward zero for a negative amount too
    [-9_999n, 6, '1', '0'], // never "-0"
    [10n ** 18n, 18, '3456.789', '3456.78'],
    [1n, 18, '100000000000000000', '0.1'],
    [5n, 0, '0', '0'],
    [5n, 0, '1.005', '5.02'], // 5.025 -> 5.02 (toward zero, not half-up)
    [2n ** 256n * 10n ** 6n, 6, '1', (2n ** 256n).toString()],
    [7n, 0, '00.50', '3.5'],
  ])('usdValue(%s, %i, %s) = %s', (base, d, price, want) => {
    expect(usdValue(base, d, price)).toBe(want);
  });

  it.each(['-1', '', '1e2', '+1', '.5', '1.', '$1', ' 1', '0x1'])('rejects price %j', (price) => {
    expect(() => usdValue(1n, 6, price)).toThrow(RangeError);
  });

  it('rejects bad decimals', () => {
    expect(() => usdValue(1n, -1, '1')).toThrow(RangeError);
    expect(() => usdValue(1n, 256, '1')).toThrow(RangeError);
  });

  it('matches a decimal.js reference over 500 seeded values', () => {
    const next = rng(0x05dn);
    for (let i = 0; i < 500; i++) {
      const d = randomInt(next, 0, 24);
      const base = randomBits(next, randomInt(next, 0, 200));
      const price = `${randomInt(next, 0, 99_999)}.${randomBits(next, 40)
        .toString()
        .slice(0, randomInt(next, 1, 12))}`;
      const want = truncTrim(new D(base.toString()).div(new D(10).pow(d)).mul(price), 2);
      expect(usdValue(base, d, price), `${base} ${d} ${price}`).toBe(want);
    }
  });
});
