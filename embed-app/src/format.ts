/** Exact display of amounts, APYs and fees: bigint and string arithmetic, never floats. */
import { formatUnits, parseUnits } from 'viem';

/** "1234567.891" → "1,234,567.89" (rounded down to `places`). */
export function displayAmount(whole: string, places = 2): string {
  const negative = whole.startsWith('-');
  const [int = '0', frac = ''] = whole.replace('-', '').split('.');
  const cut = frac.slice(0, places).replace(/0+$/, '');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${cut ? `.${cut}` : ''}`;
}

export const displayUnits = (base: bigint, decimals: number, places = 2) =>
  displayAmount(formatUnits(base, decimals), places);

/** "0.061234" → "6.12 %" (half away from zero, as the API rounds). */
export function displayApy(fraction: string): string {
  const negative = fraction.startsWith('-');
  const micro = parseUnits(fraction.replace('-', ''), 6); // 6 places of the fraction
  const basisHundredths = (micro + 50n) / 100n; // percent with 2 places
  const s = formatUnits(basisHundredths, 2);
  const [i, f = ''] = s.split('.');
  return `${negative && basisHundredths > 0n ? '-' : ''}${i}.${f.padEnd(2, '0')} %`;
}

/** 250 → "2.5 %". */
export function displayBps(bps: number): string {
  return `${formatUnits(BigInt(bps), 2)} %`;
}

/** USD value of `assets` base units at a decimal price, rounded down to cents. */
export function usdValue(assets: bigint, decimals: number, price: string): string {
  const [i = '0', f = ''] = price.split('.');
  const priceScaled = BigInt(i + f);
  const cents = (assets * priceScaled * 100n) / 10n ** BigInt(decimals + f.length);
  return displayAmount(formatUnits(cents, 2), 2);
}

/**
 * Parses what the user typed into base units. Errors in words: the caller shows them as they are.
 */
export function parseAmount(
  raw: string,
  decimals: number,
): { ok: true; value: bigint } | { ok: false; message: string } {
  const text = raw.trim().replace(/,/g, '');
  if (text === '') return { ok: false, message: 'Enter an amount.' };
  if (!/^\d*\.?\d*$/.test(text) || text === '.') {
    return { ok: false, message: 'Enter a number such as 25 or 25.50.' };
  }
  const frac = text.split('.')[1] ?? '';
  if (frac.length > decimals) {
    return { ok: false, message: `Use at most ${decimals} digits after the decimal point.` };
  }
  const value = parseUnits(text, decimals);
  if (value === 0n) return { ok: false, message: 'Enter an amount greater than zero.' };
  return { ok: true, value };
}

export const shortAddress = (a: string) => `${a.slice(0, 6)}…${a.slice(-4)}`;

export function displayDate(unixSeconds: number): string {
  return (
    new Date(unixSeconds * 1000).toLocaleString('en-GB', {
      dateStyle: 'medium',
      timeStyle: 'short',
      timeZone: 'UTC',
    }) + ' UTC'
  );
}
