/**
 * APY from two ERC-4626 share prices (DECISIONS, "Numbers"): the APY of day D is
 * `(pps_D / pps_{D-1})^365 − 1`, generalised to a gap of `days` days as `(ratio)^(365/days) − 1`.
 *
 * A share price is kept as the exact rational `totalAssets() / totalSupply()` (both bigints in base
 * units). The asset/share decimals cancel in the ratio of two prices of the same contract, so they
 * are not needed here.
 *
 * Result format: a decimal fraction string with exactly 6 fractional digits, e.g. `"0.061234"`,
 * `"-0.012000"`, `"0.000000"`; rounded half away from zero (…5 in the 7th place goes up in
 * magnitude); `"-0.000000"` never appears (anything that rounds to zero is `"0.000000"`).
 *
 * The computation is exact, not merely high-precision: with ratio = p/q and 365/days = a/b in lowest
 * terms, floor(2·10^6·ratio^(a/b)) is the integer b-th root of floor((2·10^6)^b·p^a / q^a), which
 * decides the half-way rounding with no error for any bigint inputs.
 */
import { floorRootOfRatio, formatFixed, gcd } from './exact.ts';

/** An exact share price: `assets / supply` asset base units per share base unit. */
export interface SharePrice {
  /** `totalAssets()` in asset base units. */
  assets: bigint;
  /** `totalSupply()` in share base units. */
  supply: bigint;
}

export const APY_PLACES = 6;

/** Scale of 2·10^6 makes the 7th-place half-way point an integer boundary. */
const TWICE_SCALE = 2n * 10n ** BigInt(APY_PLACES);

/** Validated SharePrice from raw chain reads; throws RangeError on negative values. */
export function sharePrice(totalAssets: bigint, totalSupply: bigint): SharePrice {
  if (totalAssets < 0n || totalSupply < 0n) {
    throw new RangeError('totalAssets and totalSupply must be non-negative');
  }
  return { assets: totalAssets, supply: totalSupply };
}

/** A price is usable only with both sides non-zero (empty vault or wiped-out assets: no price). */
function usable(pps: SharePrice): boolean {
  return pps.assets > 0n && pps.supply > 0n;
}

/**
 * `(pps_cur / pps_prev)^(365/days) − 1` as a 6-place string (format above), or null when either
 * share price is undefined or zero (supply 0 or assets 0): no APY for that day.
 * `days` is the whole number of days between the two prices (>= 1).
 */
export function apyFromSharePrices(prev: SharePrice, cur: SharePrice, days = 1): string | null {
  if (!Number.isInteger(days) || days < 1) {
    throw new RangeError(`days must be a positive integer, got ${String(days)}`);
  }
  for (const pps of [prev, cur]) {
    if (pps.assets < 0n || pps.supply < 0n) {
      throw new RangeError('share price components must be non-negative');
    }
  }
  if (!usable(prev) || !usable(cur)) return null;

  // ratio = pps_cur / pps_prev = (cur.assets · prev.supply) / (cur.supply · prev.assets)
  let p = cur.assets * prev.supply;
  let q = cur.supply * prev.assets;
  const g = gcd(p, q);
  p /= g;
  q /= g;
  const eg = Number(gcd(365n, BigInt(days)));
  const a = BigInt(365 / eg);
  const b = days / eg;

  // N = floor(2·10^6 · r), r = ratio^(a/b) > 0;  F = N − 2·10^6 = floor(2x), x = 10^6 · (r − 1).
  const { floor: n, exact } = floorRootOfRatio(TWICE_SCALE ** BigInt(b) * p ** a, q ** a, b);
  const f = n - TWICE_SCALE;
  let k: bigint;
  if (f >= 0n) {
    // x >= 0: round(x) = floor(x + 1/2) = floor((floor(2x) + 1) / 2)
    k = (f + 1n) / 2n;
  } else {
    // x < 0: round(x) = −floor(−x + 1/2) and floor(−2x) = −ceil(2x) = −(F + (exact ? 0 : 1))
    const g2 = -(f + (exact ? 0n : 1n));
    k = -((g2 + 1n) / 2n);
  }
  return formatFixed(k, APY_PLACES);
}
