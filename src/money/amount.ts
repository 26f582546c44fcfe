/**
 * Validation of the yield-calc `amount` query parameter (DECISIONS, "Endpoint details"): a plain
 * decimal in whole asset units matching `^[0-9]+(\.[0-9]+)?$`, greater than 0, at most 2^256 whole
 * units, with no more fractional digits than the asset's decimals. Everything else — absent, empty,
 * exponent, sign, hex, spaces, `.5`, `5.` — is `{ ok: false }`, which the route answers as 400
 * `invalid_amount`. Leading zeros are accepted (the regex allows them) and dropped from the echo.
 */
import { assertDecimals, pow10 } from './exact.ts';
import { formatUnits } from './units.ts';

export const MAX_AMOUNT_WHOLE_UNITS = 2n ** 256n;

const AMOUNT = /^([0-9]+)(?:\.([0-9]+))?$/;
/** 2^256 has 78 digits; a longer integer part (after leading zeros) is always too large. */
const MAX_INT_DIGITS = MAX_AMOUNT_WHOLE_UNITS.toString().length;

export type ParsedAmount =
  | {
      ok: true;
      /** The principal in base units of the asset. */
      base: bigint;
      /** Canonical echo for `principal`: formatUnits(base, decimals), e.g. "0012.50" -> "12.5". */
      normalized: string;
    }
  | { ok: false };

export function parseAmount(raw: string | undefined, decimals: number): ParsedAmount {
  assertDecimals(decimals);
  if (typeof raw !== 'string') return { ok: false };
  const m = AMOUNT.exec(raw);
  if (!m) return { ok: false };
  const int = (m[1] ?? '').replace(/^0+/, '');
  const frac = m[2] ?? '';
  if (frac.length > decimals) return { ok: false };
  // Bound the work before any BigInt: a huge (non-zero-led) integer part is over 2^256 anyway.
  if (int.length > MAX_INT_DIGITS) return { ok: false };
  const base = BigInt(int + frac.padEnd(decimals, '0') || '0');
  if (base <= 0n) return { ok: false };
  if (base > MAX_AMOUNT_WHOLE_UNITS * pow10(decimals)) return { ok: false };
  return { ok: true, base, normalized: formatUnits(base, decimals) };
}
