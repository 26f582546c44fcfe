import { describe, expect, it } from 'vitest';
import {
  divRound,
  floorRootOfRatio,
  formatFixed,
  gcd,
  iroot,
  parseScaled,
} from '../../src/money/exact.ts';
import { randomBits, randomInt, rng } from './oracle.ts';

describe('exact helpers (internal)', () => {
  it('divRound', () => {
    const cases: [bigint, bigint, bigint, bigint, bigint][] = [
      // num, den, trunc, floor, halfAwayFromZero
      [7n, 2n, 3n, 3n, 4n],
      [-7n, 2n, -3n, -4n, -4n],
      [7n, -2n, -3n, -4n, -4n],
      [-7n, -2n, 3n, 3n, 4n],
      [5n, 3n, 1n, 1n, 2n],
      [4n, 3n, 1n, 1n, 1n],
      [-4n, 3n, -1n, -2n, -1n],
      [6n, 3n, 2n, 2n, 2n],
      [0n, 5n, 0n, 0n, 0n],
      [-1n, 3n, 0n, -1n, 0n],
    ];
    for (const [n, d, t, f, h] of cases) {
      expect([
        divRound(n, d, 'trunc'),
        divRound(n, d, 'floor'),
        divRound(n, d, 'halfAwayFromZero'),
      ]).toEqual([t, f, h]);
    }
    expect(() => divRound(1n, 0n, 'trunc')).toThrow(RangeError);
  });

  it('iroot is the exact floor root (seeded)', () => {
    const next = rng(0x1007n);
    for (let i = 0; i < 2000; i++) {
      const k = randomInt(next, 1, 40);
      const n = randomBits(next, randomInt(next, 0, 2000));
      const r = iroot(n, k);
      const K = BigInt(k);
      expect(r ** K <= n && (r + 1n) ** K > n, `${n} ${k}`).toBe(true);
    }
    for (const [n, k, r] of [
      [0n, 3, 0n],
      [1n, 3, 1n],
      [7n, 3, 1n],
      [8n, 3, 2n],
      [26n, 3, 2n],
      [27n, 3, 3n],
      [10n ** 24n, 12, 100n],
      [10n ** 24n - 1n, 12, 99n],
    ] as const) {
      expect(iroot(n, k)).toBe(r);
    }
    expect(() => iroot(-1n, 2)).toThrow(RangeError);
    expect(() => iroot(4n, 0)).toThrow(RangeError);
  });

  it('floorRootOfRatio reports exactness', () => {
    expect(floorRootOfRatio(27n, 1n, 3)).toEqual({ floor: 3n, exact: true });
    expect(floorRootOfRatio(54n, 2n, 3)).toEqual({ floor: 3n, exact: true });
    expect(floorRootOfRatio(55n, 2n, 3)).toEqual({ floor: 3n, exact: false });
    expect(floorRootOfRatio(28n, 1n, 3)).toEqual({ floor: 3n, exact: false });
    expect(floorRootOfRatio(0n, 7n, 2)).toEqual({ floor: 0n, exact: true });
  });

  it('gcd, parseScaled, formatFixed', () => {
    expect(gcd(12n, -18n)).toBe(6n);
    expect(gcd(0n, 5n)).toBe(5n);
    expect(parseScaled('-012.340')).toEqual({ value: -12340n, scale: 3 });
    expect(parseScaled('5')).toEqual({ value: 5n, scale: 0 });
    expect(parseScaled('5.')).toBeNull();
    expect(formatFixed(0n, 6)).toBe('0.000000');
    expect(formatFixed(-1n, 6)).toBe('-0.000001');
    expect(formatFixed(61234n, 6)).toBe('0.061234');
    expect(formatFixed(-1234567n, 2)).toBe('-12345.67');
    expect(formatFixed(42n, 0)).toBe('42');
  });
});
