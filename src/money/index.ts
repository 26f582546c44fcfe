/**
 * Public API of the money module: pure, exact (bigint-only) amount and APY math. No I/O, no floats.
 * Amount strings are whole units, trimmed (`"1250.5"`); APYs are 6-place fractions (`"0.061234"`).
 */
export { MAX_AMOUNT_WHOLE_UNITS, type ParsedAmount, parseAmount } from './amount.ts';
export { APY_PLACES, apyFromSharePrices, type SharePrice, sharePrice } from './apy.ts';
export {
  CHANGE_PCT_PLACES,
  changePct,
  decimalToJsonNumber,
  exceedsThreshold,
} from './change.ts';
export { projectYield, type YieldProjection } from './projection.ts';
export { formatUnits, toBaseUnits, tryToBaseUnits } from './units.ts';
export { USD_PLACES, usdValue } from './usd.ts';
