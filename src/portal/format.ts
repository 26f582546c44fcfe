/**
 * Figures as the portal shows them to people: APYs as percentages, amounts with thousands
 * separators, both to 2 places (rounded half away from zero). Display only, and exact: bigint
 * arithmetic on the API's strings, never floats; the exact values stay in the data the charts and
 * the CSV carry.
 */
import { toBaseUnits } from '../money/index.ts';

/** `value / 10^shift` rounded half away from zero. */
function roundShift(value: bigint, shift: number): bigint {
  if (shift <= 0) return value * 10n ** BigInt(-shift);
  const d = 10n ** BigInt(shift);
  const q = value / d;
  const r = value % d;
  const up = (r < 0n ? -r : r) * 2n >= d;
  return up ? q + (value < 0n ? -1n : 1n) : q;
}

/** Hundredths as "1234.50", grouped by thousands: "1,234.50". */
function hundredths(v: bigint): string {
  const sign = v < 0n ? '-' : '';
  const abs = (v < 0n ? -v : v).toString().padStart(3, '0');
  const int = abs.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}${int}.${abs.slice(-2)}`;
}

/** A 6-place APY fraction as a percentage with 2 places ("0.051234" → "5.12 %"); null → "—". */
export function percent(apy: string | null | undefined): string {
  if (apy === null || apy === undefined) return '—';
  // The fraction in millionths; a percent in hundredths is millionths / 100.
  return `${hundredths(roundShift(toBaseUnits(apy, 6), 2))} %`;
}

/** Base units as whole units with 2 places, grouped, and the symbol ("1,234,567.89 USDC"). */
export function money(base: bigint, decimals: number, symbol: string): string {
  return `${hundredths(roundShift(base, decimals - 2))} ${symbol}`;
}
