import { describe, expect, it } from 'vitest';
import { formatUnits, toBaseUnits, tryToBaseUnits } from '../../src/money/index.ts';
import { D, randomBits, randomInt, rng } from './oracle.ts';

const TWO_256 = 2n ** 256n;

describe('formatUnits', () => {
  it.each([
    [0n, 6, '0'],
    [1n, 6, '0.000001'],
    [-1n, 6, '-0.000001'],
    [1_250_500_000n, 6, '1250.5'],
    [1_250_000_000n, 6, '1250'],
    [-1_250_500_000n, 6, '-1250.5'],
    [10n, 1, '1'],
    [100n, 2, '1'],
    [101n, 2, '1.01'],
    [123n, 0, '123'],
    [-123n, 0, '-123'],
    [0n, 0, '0'],
    [1n, 18, '0.000000000000000001'],
    [10n ** 18n, 18, '1'],
    [10n ** 18n + 10n ** 17n, 18, '1.1'],
    [999_999n, 6, '0.999999'],
    [1_000_001n, 6, '1.000001'],
    [1n, 255, `0.${'0'.repeat(254)}1`],
    [TWO_256, 0, TWO_256.toString()],
    [TWO_256 * 10n ** 6n, 6, TWO_256.toString()],
    [TWO_256 * 10n ** 6n + 1n, 6, `${TWO_256}.000001`],
    [-(TWO_256 * 10n ** 18n) - 5n, 18, `-${TWO_256}.000000000000000005`],
  ])('formatUnits(%s, %i) = %s', (base, decimals, want) => {
    expect(formatUnits(base, decimals)).toBe(want);
  });

  it('never writes a trailing dot, a leading zero run or "-0"', () => {
    for (const [b, d] of [
      [0n, 0],
      [0n, 18],
      [-0n, 6],
      [1000n, 3],
    ] as const) {
      const s = formatUnits(b, d);
      expect(s).not.toMatch(/\.$/);
      expect(s).not.toMatch(/^-?0[0-9]/);
      expect(s).not.toBe('-0');
    }
  });

  it.each([-1, 256, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('rejects decimals %s', (d) => {
    expect(() => formatUnits(1n, d)).toThrow(RangeError);
  });
});

describe('toBaseUnits', () => {
  it.each([
    ['0', 6, 0n],
    ['0.000001', 6, 1n],
    ['-0.000001', 6, -1n],
    ['1250.5', 6, 1_250_500_000n],
    ['1250.500000', 6, 1_250_500_000n],
    ['0001250.5', 6, 1_250_500_000n],
    ['-0', 6, 0n],
    ['7', 0, 7n],
    ['1', 18, 10n ** 18n],
    [TWO_256.toString(), 0, TWO_256],
    [`${TWO_256}.000001`, 6, TWO_256 * 10n ** 6n + 1n],
    [`1.${'0'.repeat(254)}1`, 255, 10n ** 255n + 1n],
  ])('toBaseUnits(%s, %i) = %s', (s, d, want) => {
    expect(toBaseUnits(s, d)).toBe(want);
    expect(tryToBaseUnits(s, d)).toBe(want);
  });

  it.each([
    ['1.0000001', 6],
    ['1.5', 0],
    ['1.50', 1], // even trailing zeros beyond the decimals are refused, never silently dropped
    ['', 6],
    [' 1', 6],
    ['1 ', 6],
    ['1\n', 6],
    ['+1', 6],
    ['--1', 6],
    ['1e3', 6],
    ['1E3', 6],
    ['0x10', 6],
    ['.5', 6],
    ['5.', 6],
    ['-.5', 6],
    ['1,5', 6],
    ['1_000', 6],
    ['NaN', 6],
    ['Infinity', 6],
    ['１', 6],
  ])('rejects %j with %i decimals', (s, d) => {
    expect(() => toBaseUnits(s, d)).toThrow(RangeError);
    expect(tryToBaseUnits(s, d)).toBeNull();
  });

  it('throws on bad decimals even in the try variant (caller bug, not input error)', () => {
    expect(() => tryToBaseUnits('1', -1)).toThrow(RangeError);
    expect(() => toBaseUnits('1', 256)).toThrow(RangeError);
  });
});

describe('formatUnits against decimal.js (seeded property)', () => {
  it('equals x / 10^d written by decimal.js, for 5000 random bigints and decimals', () => {
    const next = rng(0xf0f0n);
    for (let i = 0; i < 5000; i++) {
      const mag = randomBits(next, randomInt(next, 0, 300));
      const x = next() & 1n ? -mag : mag;
      const d = randomInt(next, 0, 40);
      const want = new D(x.toString()).div(new D(10).pow(d)).toFixed();
      expect(formatUnits(x, d), `${x} @ ${d}`).toBe(want === '-0' ? '0' : want);
    }
  });
});

describe('round trip (seeded property)', () => {
  it('toBaseUnits(formatUnits(x, d), d) === x for 5000 random bigints', () => {
    const next = rng(0x5eedn);
    for (let i = 0; i < 5000; i++) {
      const bits = randomInt(next, 0, 320);
      const mag = randomBits(next, bits);
      const x = next() & 1n ? -mag : mag;
      const d = randomInt(next, 0, 40);
      const s = formatUnits(x, d);
      expect(toBaseUnits(s, d), `${x} @ ${d} -> ${s}`).toBe(x);
    }
  });

  it('formatUnits(toBaseUnits(s, d), d) is the canonical form of s for random decimal strings', () => {
    const next = rng(0xc0ffeen);
    for (let i = 0; i < 3000; i++) {
      const d = randomInt(next, 0, 30);
      const intDigits = randomBits(next, randomInt(next, 0, 200)).toString();
      const zeros = '0'.repeat(randomInt(next, 0, 3));
      const fracLen = randomInt(next, 0, d);
      const frac =
        fracLen === 0
          ? ''
          : randomBits(next, 128).toString().padStart(fracLen, '0').slice(-fracLen);
      const neg = (next() & 1n) === 1n;
      const s = `${neg ? '-' : ''}${zeros}${intDigits}${frac ? `.${frac}` : ''}`;
      let canonical = `${intDigits}${frac ? `.${frac}` : ''}`
        .replace(/(\.[0-9]*?)0+$/, '$1')
        .replace(/\.$/, '');
      if (neg && /[1-9]/.test(canonical)) canonical = `-${canonical}`;
      expect(formatUnits(toBaseUnits(s, d), d), s).toBe(canonical);
    }
  });
});
