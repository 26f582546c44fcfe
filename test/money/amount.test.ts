import { describe, expect, it } from 'vitest';
import { MAX_AMOUNT_WHOLE_UNITS, parseAmount } from '../../src/money/index.ts';

const TWO_256 = 2n ** 256n;
const T = TWO_256.toString();

describe('parseAmount: accepted', () => {
  it.each([
    ['1', 6, 1_000_000n, '1'],
    ['1250.5', 6, 1_250_500_000n, '1250.5'],
    ['1250.50', 6, 1_250_500_000n, '1250.5'],
    ['1250.500000', 6, 1_250_500_000n, '1250.5'],
    ['0001250.5', 6, 1_250_500_000n, '1250.5'],
    ['0.000001', 6, 1n, '0.000001'], // one base unit
    ['00.000001', 6, 1n, '0.000001'],
    ['1.0', 6, 1_000_000n, '1'],
    ['7', 0, 7n, '7'],
    ['1', 18, 10n ** 18n, '1'],
    ['0.000000000000000001', 18, 1n, '0.000000000000000001'],
    [T, 0, TWO_256, T], // 2^256 itself is allowed ("at most 2^256")
    [T, 6, TWO_256 * 10n ** 6n, T],
    [`${T}.0`, 6, TWO_256 * 10n ** 6n, T],
    [`${T}.000000`, 6, TWO_256 * 10n ** 6n, T],
    [`${TWO_256 - 1n}.999999`, 6, TWO_256 * 10n ** 6n - 1n, `${TWO_256 - 1n}.999999`],
    [`${'0'.repeat(200)}${T}`, 18, TWO_256 * 10n ** 18n, T], // leading zeros do not count as size
  ])('%j with %i decimals', (raw, d, base, normalized) => {
    expect(parseAmount(raw, d)).toEqual({ ok: true, base, normalized });
  });

  it('exposes the 2^256 cap', () => {
    expect(MAX_AMOUNT_WHOLE_UNITS).toBe(TWO_256);
  });
});

describe('parseAmount: rejected (400 invalid_amount)', () => {
  it.each([
    [undefined, 6],
    ['', 6],
    ['0', 6],
    ['000', 6],
    ['0.0', 6],
    ['0.000000', 6],
    ['0.0000001', 6], // more fractional digits than decimals
    ['1.0000001', 6],
    ['1.5', 0],
    ['1.0', 0], // a fractional part at all, with 0 decimals
    [`${TWO_256 + 1n}`, 0], // 2^256 + 1
    [`${TWO_256 + 1n}`, 6],
    [`${T}.000001`, 6], // 2^256 + 1 base unit
    [`${T}.1`, 1],
    [`${TWO_256 * 10n}`, 6],
    ['9'.repeat(79), 6],
    ['9'.repeat(100_000), 6],
    ['-1', 6],
    ['-0', 6],
    ['+1', 6],
    ['1e3', 6],
    ['1E3', 6],
    ['1e-3', 6],
    ['0x10', 6],
    ['0b1', 6],
    ['.5', 6],
    ['5.', 6],
    ['.', 6],
    [' 1', 6],
    ['1 ', 6],
    ['1 000', 6],
    ['1\n', 6],
    ['\t1', 6],
    ['1,5', 6],
    ['1_000', 6],
    ['NaN', 6],
    ['Infinity', 6],
    ['１', 6], // full-width digit
    ['٣', 6], // Arabic-Indic digit
    ['1..5', 6],
    ['1.5.5', 6],
  ])('%j with %i decimals', (raw, d) => {
    expect(parseAmount(raw, d)).toEqual({ ok: false });
  });

  it('rejects non-string input defensively', () => {
    expect(parseAmount(1 as unknown as string, 6)).toEqual({ ok: false });
    expect(parseAmount(['1'] as unknown as string, 6)).toEqual({ ok: false });
  });

  it('throws on invalid decimals (a product misconfiguration, not a request error)', () => {
    expect(() => parseAmount('1', -1)).toThrow(RangeError);
    expect(() => parseAmount('1', 256)).toThrow(RangeError);
  });
});
