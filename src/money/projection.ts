/**
 * The yield-calc projection (DECISIONS, "Endpoint details"):
 *   annual_yield  = principal × apy
 *   monthly_yield = principal × ((1 + apy)^(1/12) − 1)
 * Both exact, then rounded toward zero to the asset's decimals and written in the canonical amount
 * format of formatUnits. A negative APY gives negative yields (rounded toward zero, so a loss is
 * never overstated). The twelfth root is decided exactly with an integer root, so there is no
 * precision limit on the principal or the APY.
 */
import { divRound, floorRootOfRatio, parseScaled, pow10 } from './exact.ts';
import { formatUnits } from './units.ts';

export interface YieldProjection {
  principal: string;
  annual_yield: string;
  monthly_yield: string;
  net_apy_for_user: string;
}

/**
 * `principalBase` is the validated principal in base units (parseAmount's `base`, >= 0); `apy` is a
 * plain decimal fraction string (normally the stored 6-place `net_apy_for_user`), echoed unchanged.
 * Throws RangeError on a malformed APY or an APY below −1 (a share price cannot fall below zero).
 */
export function projectYield(
  principalBase: bigint,
  decimals: number,
  apy: string,
): YieldProjection {
  if (principalBase < 0n) throw new RangeError('principal must be non-negative');
  const principal = formatUnits(principalBase, decimals); // also validates decimals
  const parsed = parseScaled(apy);
  if (!parsed) throw new RangeError(`not a plain decimal APY: ${JSON.stringify(apy)}`);
  const den = pow10(parsed.scale); // apy = parsed.value / den
  const growth = den + parsed.value; // 1 + apy = growth / den
  if (growth < 0n) throw new RangeError(`APY below -1: ${apy}`);

  const annual = divRound(principalBase * parsed.value, den, 'trunc');

  // principal · r with r = (growth/den)^(1/12):  floor(principal · r) = iroot12(principal^12 · growth / den)
  const { floor, exact } = floorRootOfRatio(principalBase ** 12n * growth, den, 12);
  // monthly = principal·r − principal; toward zero: floor when >= 0, ceil when < 0.
  const monthly = growth >= den ? floor - principalBase : floor + (exact ? 0n : 1n) - principalBase;

  return {
    principal,
    annual_yield: formatUnits(annual, decimals),
    monthly_yield: formatUnits(monthly, decimals),
    net_apy_for_user: apy,
  };
}
