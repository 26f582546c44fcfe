/**
 * Independent reference computations for the money tests: decimal.js at 120 significant digits
 * (a local clone; the global Decimal config is never touched) plus a seeded bigint PRNG. The module
 * under test never uses decimal.js, so agreement here is a check by a different method.
 */
import { Decimal } from 'decimal.js';

export const D = Decimal.clone({ precision: 120, rounding: Decimal.ROUND_HALF_UP });
export type Dec = Decimal;

/** (pps_cur/pps_prev)^(365/days) − 1 to 6 places, half away from zero, "-0.000000" folded to 0. */
export function oracleApy(
  prev: { assets: bigint; supply: bigint },
  cur: { assets: bigint; supply: bigint },
  days = 1,
): string {
  const ratio = new D(cur.assets.toString())
    .mul(prev.supply.toString())
    .div(new D(cur.supply.toString()).mul(prev.assets.toString()));
  const r = 365 % days === 0 ? ratio.pow(365 / days) : ratio.pow(new D(365).div(days));
  return fold(r.minus(1).toFixed(6, D.ROUND_HALF_UP));
}

export function fold(s: string): string {
  return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
}

/** Whole-unit string of a Decimal truncated toward zero to `places`, trailing zeros trimmed. */
export function truncTrim(x: Dec, places: number): string {
  const s = x.toFixed(places, D.ROUND_DOWN);
  const t = s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
  return fold(t);
}

/** splitmix64 over bigints: deterministic, seedable. */
export function rng(seed: bigint): () => bigint {
  let state = seed & 0xffffffffffffffffn;
  return () => {
    state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
    return z ^ (z >> 31n);
  };
}

/** Uniform-ish bigint in [0, 2^bits). */
export function randomBits(next: () => bigint, bits: number): bigint {
  let x = 0n;
  for (let have = 0; have < bits; have += 64) x = (x << 64n) | next();
  return x & ((1n << BigInt(bits)) - 1n);
}

/** Integer in [lo, hi] (small ranges, as a number). */
export function randomInt(next: () => bigint, lo: number, hi: number): number {
  return lo + Number(next() % BigInt(hi - lo + 1));
}
