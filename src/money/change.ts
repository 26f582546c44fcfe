/**
 * Day-over-day change for the operational webhooks (spec "Operational events"; DECISIONS, "Outbound
 * webhooks"): `change_pct = (current − previous) / |previous| × 100`, 2 decimals, no value (and no
 * event) when previous is 0. Works on APY strings (`apy_change`) and on base-unit TVL bigints
 * (`tvl_alert`; the asset decimals cancel in the ratio). Threshold decisions are exact, on the
 * unrounded ratio: "moved by more than 10%" is strictly greater, so exactly 10% does not fire and
 * 10.001% does, even though both display as "10.00".
 */
import { abs, divRound, formatFixed, parseScaled, pow10 } from './exact.ts';

export const CHANGE_PCT_PLACES = 2;

/** Both sides as integers on a common scale (the scale cancels in every ratio below). */
function aligned(previous: string | bigint, current: string | bigint): [bigint, bigint] {
  if (typeof previous === 'bigint' && typeof current === 'bigint') return [previous, current];
  if (typeof previous === 'string' && typeof current === 'string') {
    const p = parseScaled(previous);
    const c = parseScaled(current);
    if (!p || !c) {
      throw new RangeError(
        `not plain decimals: ${JSON.stringify(previous)}, ${JSON.stringify(current)}`,
      );
    }
    const scale = Math.max(p.scale, c.scale);
    return [p.value * pow10(scale - p.scale), c.value * pow10(scale - c.scale)];
  }
  throw new TypeError('previous and current must both be decimal strings or both be bigints');
}

/**
 * Percent change rounded half away from zero to 2 places, always written with 2 fractional digits
 * (`"12.35"`, `"-25.00"`, `"0.00"`; never `"-0.00"`), or null when previous is 0.
 * Strings are plain signed decimals (APYs); bigints are base units (TVL).
 */
export function changePct(previous: string, current: string): string | null;
export function changePct(previous: bigint, current: bigint): string | null;
export function changePct(previous: string | bigint, current: string | bigint): string | null {
  const [p, c] = aligned(previous, current);
  if (p === 0n) return null;
  const scaled = divRound((c - p) * 100n * pow10(CHANGE_PCT_PLACES), abs(p), 'halfAwayFromZero');
  return formatFixed(scaled, CHANGE_PCT_PLACES);
}

/**
 * True when |current − previous| / |previous| × 100 is STRICTLY greater than `thresholdPct`,
 * compared exactly before any rounding. False when previous is 0 (no event, per DECISIONS).
 * `thresholdPct` is a non-negative plain decimal string (`"10"`, `"12.5"`) or a non-negative
 * integer number (`10`, `20`); fractional numbers are refused so no float enters the comparison.
 */
export function exceedsThreshold(
  previous: string,
  current: string,
  thresholdPct: string | number,
): boolean;
export function exceedsThreshold(
  previous: bigint,
  current: bigint,
  thresholdPct: string | number,
): boolean;
export function exceedsThreshold(
  previous: string | bigint,
  current: string | bigint,
  thresholdPct: string | number,
): boolean {
  const t = parseThreshold(thresholdPct);
  const [p, c] = aligned(previous, current);
  if (p === 0n) return false;
  // |c − p| · 100 / |p| > t.value / 10^t.scale   <=>   |c − p| · 100 · 10^t.scale > t.value · |p|
  return abs(c - p) * 100n * pow10(t.scale) > t.value * abs(p);
}

function parseThreshold(thresholdPct: string | number): { value: bigint; scale: number } {
  if (typeof thresholdPct === 'number') {
    if (!Number.isSafeInteger(thresholdPct) || thresholdPct < 0) {
      throw new RangeError('a numeric threshold must be a non-negative integer; pass a string');
    }
    return { value: BigInt(thresholdPct), scale: 0 };
  }
  const t = parseScaled(thresholdPct);
  if (!t || t.value < 0n) throw new RangeError(`bad threshold: ${JSON.stringify(thresholdPct)}`);
  return t;
}

/** JSON numbers round-trip any decimal of at most 15 significant digits (IEEE-754 double, DBL_DIG). */
const MAX_SAFE_SIGNIFICANT_DIGITS = 15;

/**
 * ONLY for the webhook payload fields the spec types as JSON numbers — `apy_change`'s
 * `previous_apy`, `current_apy` and `change_pct` (and `tvl_alert`'s `change_pct`). Everywhere else
 * amounts and APYs stay strings. Takes a plain decimal string (e.g. a 6-place APY) and returns the
 * number whose JSON serialisation denotes exactly the same decimal value; throws RangeError when
 * that cannot be guaranteed (more than 15 significant digits) or the input is malformed.
 * Never returns -0.
 */
export function decimalToJsonNumber(decimal: string): number {
  const parsed = parseScaled(decimal);
  if (!parsed) throw new RangeError(`not a plain decimal: ${JSON.stringify(decimal)}`);
  const significant = abs(parsed.value).toString().replace(/^0+/, '').replace(/0+$/, '');
  if (significant.length > MAX_SAFE_SIGNIFICANT_DIGITS) {
    throw new RangeError(
      `${decimal} has more than 15 significant digits; not exact as a JSON number`,
    );
  }
  if (parsed.value === 0n) return 0;
  return Number(decimal);
}
