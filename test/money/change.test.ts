import { describe, expect, it } from 'vitest';
import { changePct, decimalToJsonNumber, exceedsThreshold } from '../../src/money/index.ts';
import { D, randomBits, randomInt, rng } from './oracle.ts';

describe('changePct', () => {
  it.each([
    ['0.050000', '0.055000', '10.00'],
    ['0.050000', '0.045000', '-10.00'],
    ['0.05', '0.055001', '10.00'], // 10.002 displays as 10.00 (the threshold still fires, below)
    ['0.050000', '0.050000', '0.00'],
    ['0.061234', '0.073481', '20.00'], // 19.99999...%: 12247/61234 = 0.199999673...
    ['-0.010000', '0.010000', '200.00'], // divides by |previous|
    ['-0.010000', '-0.020000', '-100.00'],
    ['0.010000', '-0.010000', '-200.00'],
    ['0.03', '0.030001', '0.00'], // 0.00333…%
    ['0.000001', '1.000000', '99999900.00'],
    ['1', '1.5', '50.00'], // mixed scales align
  ])('APY %s -> %s = %s', (prev, cur, want) => {
    expect(changePct(prev, cur)).toBe(want);
  });

  it.each([
    [1000n, 1200n, '20.00'],
    [1000n, 800n, '-20.00'],
    [1000n, 1000n, '0.00'],
    [3n, 4n, '33.33'],
    [3n, 2n, '-33.33'],
    [3n, 5n, '66.67'],
    [800n, 801n, '0.13'], // 0.125 half away from zero
    [800n, 799n, '-0.13'], // -0.125
    [1600n, 1601n, '0.06'], // 0.0625
    [100_000n, 99_999n, '0.00'], // -0.001: never "-0.00"
    [100_000n, 100_001n, '0.00'],
    [1n, 0n, '-100.00'],
    [1n, 2n ** 256n, `${(2n ** 256n - 1n) * 100n}.00`],
  ])('TVL %s -> %s = %s', (prev, cur, want) => {
    expect(changePct(prev, cur)).toBe(want);
  });

  it('is null when previous is 0 (no event)', () => {
    expect(changePct(0n, 5n)).toBeNull();
    expect(changePct(0n, 0n)).toBeNull();
    expect(changePct('0.000000', '0.05')).toBeNull();
    expect(changePct('0', '-0.05')).toBeNull();
  });

  it('refuses mixed or malformed input', () => {
    expect(() => changePct('1' as unknown as bigint, 1n)).toThrow(TypeError);
    expect(() => changePct('1e-2', '0.01')).toThrow(RangeError);
    expect(() => changePct('0.01', ' 0.02')).toThrow(RangeError);
  });

  it('matches a decimal.js reference over 1000 seeded values', () => {
    const next = rng(0xc4a9n);
    for (let i = 0; i < 1000; i++) {
      const p = randomBits(next, randomInt(next, 1, 120)) - (1n << 60n);
      const c = randomBits(next, randomInt(next, 1, 120)) - (1n << 60n);
      if (p === 0n) continue;
      const want = new D((c - p).toString())
        .div(new D(p.toString()).abs())
        .mul(100)
        .toFixed(2, D.ROUND_HALF_UP)
        .replace(/^-0\.00$/, '0.00');
      expect(changePct(p, c), `${p} -> ${c}`).toBe(want);
    }
  });
});

describe('exceedsThreshold: strictly more than, compared exactly', () => {
  it.each([
    // apy_change at 10%
    ['0.050000', '0.055000', false], // exactly +10%
    ['0.050000', '0.055001', true], // +10.002%
    ['0.050000', '0.054999', false],
    ['0.050000', '0.045000', false], // exactly -10%
    ['0.050000', '0.044999', true], // -10.002%
    ['0.050000', '0.045001', false],
    ['0.050000', '0.050000', false],
    ['-0.050000', '-0.055000', false], // exactly 10% of |previous|
    ['-0.050000', '-0.055001', true],
    ['-0.050000', '0.050000', true], // 200%
    ['0.100000', '0.1100000000000000000000000001', true], // a hair over 10%, beyond any float
    ['0.100000', '0.1099999999999999999999999999', false],
  ])('10%%: %s -> %s fires %s', (prev, cur, want) => {
    expect(exceedsThreshold(prev, cur, 10)).toBe(want);
    expect(exceedsThreshold(prev, cur, '10')).toBe(want);
    expect(exceedsThreshold(prev, cur, '10.000')).toBe(want);
  });

  it.each([
    // tvl_alert at 20%, base units
    [1_000_000_000n, 1_200_000_000n, false], // exactly +20%
    [1_000_000_000n, 1_200_000_001n, true],
    [1_000_000_000n, 1_199_999_999n, false],
    [1_000_000_000n, 800_000_000n, false], // exactly -20%
    [1_000_000_000n, 799_999_999n, true],
    [1_000_000_000n, 800_000_001n, false],
    [5n, 6n, false], // exactly 20%
    [5n, 4n, false],
    [5n, 7n, true],
    [5n, 3n, true],
    [1n, 0n, true], // total drain
    [2n ** 256n * 5n, 2n ** 256n * 6n, false],
    [2n ** 256n * 5n, 2n ** 256n * 6n + 1n, true],
  ])('20%%: %s -> %s fires %s', (prev, cur, want) => {
    expect(exceedsThreshold(prev, cur, 20)).toBe(want);
    expect(exceedsThreshold(prev, cur, '20')).toBe(want);
  });

  it('never fires when previous is 0', () => {
    expect(exceedsThreshold(0n, 1_000_000n, 20)).toBe(false);
    expect(exceedsThreshold('0.000000', '0.5', 10)).toBe(false);
  });

  it('a displayed "10.00" can still fire; the threshold is not applied after rounding', () => {
    expect(changePct('0.05', '0.050000001')).toBe('0.00');
    expect(changePct(100_000n, 110_001n)).toBe('10.00');
    expect(exceedsThreshold(100_000n, 110_001n, 10)).toBe(true);
  });

  it('fractional thresholds as strings; float thresholds refused', () => {
    expect(exceedsThreshold(1000n, 1125n, '12.5')).toBe(false);
    expect(exceedsThreshold(1000n, 1126n, '12.5')).toBe(true);
    expect(exceedsThreshold(1000n, 1000n, 0)).toBe(false);
    expect(exceedsThreshold(1000n, 1001n, 0)).toBe(true);
    expect(() => exceedsThreshold(1n, 2n, 12.5)).toThrow(RangeError);
    expect(() => exceedsThreshold(1n, 2n, -1)).toThrow(RangeError);
    expect(() => exceedsThreshold(1n, 2n, '-1')).toThrow(RangeError);
    expect(() => exceedsThreshold(1n, 2n, '1e1')).toThrow(RangeError);
    expect(() => exceedsThreshold(1n, 2n, Number.NaN)).toThrow(RangeError);
  });

  it('refuses mixed types', () => {
    expect(() => exceedsThreshold(1n as unknown as string, '2', 10)).toThrow(TypeError);
  });
});

describe('decimalToJsonNumber (apy_change payload only)', () => {
  it.each([
    ['0.061234', 0.061234, '0.061234'],
    ['-0.012000', -0.012, '-0.012'],
    ['0.000001', 0.000001, '0.000001'],
    ['1.000000', 1, '1'],
    ['10.00', 10, '10'],
    ['-33.33', -33.33, '-33.33'],
    ['99999900.00', 99999900, '99999900'],
    ['123456789.123456', 123456789.123456, '123456789.123456'], // 15 significant digits
  ])('%s -> %s (JSON %s)', (s, n, json) => {
    const got = decimalToJsonNumber(s);
    expect(got).toBe(n);
    expect(JSON.stringify(got)).toBe(json);
  });

  it('never returns -0', () => {
    expect(Object.is(decimalToJsonNumber('-0.000000'), 0)).toBe(true);
    expect(Object.is(decimalToJsonNumber('0.00'), 0)).toBe(true);
  });

  it('refuses values a double cannot carry exactly, and malformed input', () => {
    expect(() => decimalToJsonNumber('1234567890.123456')).toThrow(RangeError); // 16 digits
    expect(() => decimalToJsonNumber('0.1234567890123456')).toThrow(RangeError);
    for (const bad of ['', '1e-6', '+0.1', '.1', 'NaN', '0x1', ' 1']) {
      expect(() => decimalToJsonNumber(bad)).toThrow(RangeError);
    }
  });

  it('every 6-place APY of up to 15 significant digits round-trips through JSON (seeded)', () => {
    const next = rng(0x15n);
    for (let i = 0; i < 5000; i++) {
      const micro = randomBits(next, randomInt(next, 0, 49)) - (1n << 48n);
      const neg = micro < 0n;
      const m = (neg ? -micro : micro).toString().padStart(7, '0');
      const s = `${neg ? '-' : ''}${m.slice(0, -6)}.${m.slice(-6)}`;
      const back = JSON.parse(JSON.stringify(decimalToJsonNumber(s))) as number;
      expect(new D(String(back)).eq(new D(s)), s).toBe(true);
    }
  });
});
