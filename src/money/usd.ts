/**
 * USD value of an asset amount (DECISIONS, "Numbers"): `usd_value = assets × price`, exact, rounded
 * toward zero to 2 places (cents), written in the canonical amount format of formatUnits
 * (`"1250.5"`, `"0"`, `"3"` — trailing zeros trimmed, like every other amount in the API).
 * The caller passes `"1"` for a USD-pegged asset without a price source.
 */
import { assertDecimals, divRound, parseScaled, pow10 } from './exact.ts';
import { formatUnits } from './units.ts';

export const USD_PLACES = 2;

/** `assetsBase / 10^decimals × price` in USD, truncated to cents. Price: plain decimal, >= 0. */
export function usdValue(assetsBase: bigint, decimals: number, price: string): string {
  assertDecimals(decimals);
  const parsed = parseScaled(price);
  if (!parsed || parsed.value < 0n) throw new RangeError(`bad USD price: ${JSON.stringify(price)}`);
  // cents = assetsBase · price · 100 / 10^decimals, price = value / 10^scale
  const cents = divRound(
    assetsBase * parsed.value * pow10(USD_PLACES),
    pow10(decimals + parsed.scale),
    'trunc',
  );
  return formatUnits(cents, USD_PLACES);
}
