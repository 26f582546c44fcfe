/** Conversions between an annual rate in basis points and the test vaults' per-second WAD rate. */
export const SECONDS_PER_YEAR = 365n * 86_400n;
const WAD = 10n ** 18n;

/** Simple annual rate (bps) → interest per second as a WAD fraction (floor). */
export function aprBpsToRatePerSecond(aprBps: number): bigint {
  return (BigInt(aprBps) * WAD) / 10_000n / SECONDS_PER_YEAR;
}
