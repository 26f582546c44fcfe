/**
 * Conversions between on-chain base units (bigint) and the API's whole-unit decimal strings.
 * Owns the canonical amount format: `"1250.5"`, `"0"`, `"-0.000001"` — trailing fractional zeros
 * trimmed, no trailing dot, no leading zeros, sign kept (and never `"-0"`).
 */
import { abs, assertDecimals, parseScaled, pow10 } from './exact.ts';

/** Whole-unit decimal string of `base / 10^decimals`, exact, in the canonical amount format. */
export function formatUnits(base: bigint, decimals: number): string {
  assertDecimals(decimals);
  // Split the digit string instead of dividing: one conversion per amount (the indexer formats two
  // per log, the API hundreds per answer).
  const digits = abs(base).toString();
  const cut = digits.length - decimals;
  const int = cut > 0 ? digits.slice(0, cut) : '0';
  let frac = cut > 0 ? digits.slice(cut) : digits.padStart(decimals, '0');
  let end = frac.length;
  while (end > 0 && frac.charCodeAt(end - 1) === 48 /* '0' */) end--;
  frac = frac.slice(0, end);
  const body = frac === '' ? int : `${int}.${frac}`;
  return base < 0n ? `-${body}` : body;
}

/**
 * Exact inverse of formatUnits (a viem `parseUnits` that never rounds): a plain signed decimal
 * (`^-?[0-9]+(\.[0-9]+)?$`) to base units. Throws RangeError on any other syntax (exponent, `+`,
 * hex, whitespace, `.5`, `5.`) and on more fractional digits than `decimals`, even zeros
 * (`"1.50"` with 1 decimal): nothing is ever silently dropped.
 */
export function toBaseUnits(value: string, decimals: number): bigint {
  assertDecimals(decimals);
  const parsed = parseScaled(value);
  if (!parsed) throw new RangeError(`not a plain decimal: ${JSON.stringify(value)}`);
  if (parsed.scale > decimals) {
    throw new RangeError(`${JSON.stringify(value)} has more than ${decimals} fractional digits`);
  }
  return parsed.value * pow10(decimals - parsed.scale);
}

/** Same as toBaseUnits but answers null instead of throwing. */
export function tryToBaseUnits(value: string, decimals: number): bigint | null {
  assertDecimals(decimals);
  try {
    return toBaseUnits(value, decimals);
  } catch {
    return null;
  }
}
