/**
 * Exact integer arithmetic shared by the money module (internal; not re-exported by index.ts):
 * powers of ten, strict decimal-string parsing into scaled bigints, division with an explicit
 * rounding mode, integer n-th roots, and fixed-place formatting. Every money computation reduces to
 * these on bigints, so no float and no finite-precision decimal ever touches an amount or an APY.
 */

/** ERC-20 `decimals()` is a uint8; anything outside 0..255 is a caller bug. */
export function assertDecimals(decimals: number): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) {
    throw new RangeError(`decimals must be an integer in 0..255, got ${String(decimals)}`);
  }
}

// 10^n for the decimals amounts use (0..80 covers every token); computed once each.
const POW10: bigint[] = Array.from({ length: 81 }, (_, i) => 10n ** BigInt(i));

export function pow10(n: number): bigint {
  return (Number.isInteger(n) && n >= 0 && n <= 80 ? POW10[n] : undefined) ?? 10n ** BigInt(n);
}

export function abs(x: bigint): bigint {
  return x < 0n ? -x : x;
}

export function gcd(a: bigint, b: bigint): bigint {
  let x = abs(a);
  let y = abs(b);
  while (y !== 0n) {
    [x, y] = [y, x % y];
  }
  return x;
}

/** A decimal number as `value / 10^scale`; `scale` is the count of fractional digits written. */
export interface Scaled {
  value: bigint;
  scale: number;
}

const SIGNED_PLAIN_DECIMAL = /^(-?)([0-9]+)(?:\.([0-9]+))?$/;

/**
 * Parses a plain signed decimal (`-12.50`, `0`, `3`) exactly. No exponent, no `+`, no hex, no
 * whitespace, no bare `.5` or `5.`. Returns null for anything else.
 */
export function parseScaled(raw: string): Scaled | null {
  const m = SIGNED_PLAIN_DECIMAL.exec(raw);
  if (!m) return null;
  const frac = m[3] ?? '';
  const digits = BigInt((m[2] ?? '') + frac);
  return { value: m[1] === '-' ? -digits : digits, scale: frac.length };
}

export type Rounding = 'trunc' | 'floor' | 'halfAwayFromZero';

/** `num / den` as an integer under the given rounding; `den` must be non-zero. */
export function divRound(num: bigint, den: bigint, mode: Rounding): bigint {
  if (den === 0n) throw new RangeError('division by zero');
  let n = num;
  let d = den;
  if (d < 0n) {
    n = -n;
    d = -d;
  }
  const q = n / d; // bigint division truncates toward zero
  const r = n % d; // same sign as n
  if (r === 0n) return q;
  switch (mode) {
    case 'trunc':
      return q;
    case 'floor':
      return n < 0n ? q - 1n : q;
    case 'halfAwayFromZero':
      // |r| / d >= 1/2  <=>  2|r| >= d
      if (2n * abs(r) >= d) return n < 0n ? q - 1n : q + 1n;
      return q;
  }
}

/** floor(n^(1/k)) for n >= 0, k >= 1 (Newton iteration from an over-estimate). */
export function iroot(n: bigint, k: number): bigint {
  if (n < 0n) throw new RangeError('iroot of a negative number');
  if (!Number.isInteger(k) || k < 1)
    throw new RangeError('iroot degree must be a positive integer');
  if (k === 1 || n < 2n) return n;
  const K = BigInt(k);
  // Newton decreases monotonically to the floor from any over-estimate; the closer it starts, the
  // fewer steps (each a k−1 power and a division of big integers). Within a double's range the
  // start is the floating-point root with a margin far above its error, one or two steps from the
  // answer; beyond it, 2^ceil(bits/k) > n^(1/k), up to twice the root (a dozen steps for k = 12).
  const approx = Number(n);
  let x: bigint;
  if (approx < 1e300) {
    x = BigInt(Math.ceil(approx ** (1 / k) * (1 + 1e-9))) + 1n;
  } else {
    x = 1n << BigInt(Math.ceil(n.toString(2).length / k));
  }
  for (;;) {
    const y = ((K - 1n) * x + n / x ** (K - 1n)) / K;
    if (y >= x) return x;
    x = y;
  }
}

/**
 * floor and exactness of (num/den)^(1/k) for num >= 0, den > 0:
 * floor(y^(1/k)) = floor(floor(y)^(1/k)) for real y >= 0, so an integer root of the integer quotient
 * is exact; the root is an integer iff the quotient has no remainder and is a perfect k-th power.
 */
export function floorRootOfRatio(
  num: bigint,
  den: bigint,
  k: number,
): { floor: bigint; exact: boolean } {
  if (num < 0n || den <= 0n) throw new RangeError('floorRootOfRatio needs num >= 0, den > 0');
  const q = num / den;
  const root = iroot(q, k);
  return { floor: root, exact: num % den === 0n && root ** BigInt(k) === q };
}

/** `v / 10^places` written with exactly `places` fractional digits; zero is never signed. */
export function formatFixed(v: bigint, places: number): string {
  const neg = v < 0n;
  const digits = abs(v)
    .toString()
    .padStart(places + 1, '0');
  const int = digits.slice(0, digits.length - places);
  const frac = digits.slice(digits.length - places);
  const body = places === 0 ? int : `${int}.${frac}`;
  return neg ? `-${body}` : body;
}
