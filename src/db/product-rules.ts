/**
 * The rules a product must keep, in one place for every face that creates or changes one (the CLI,
 * the fee commands, the repository) and mirrored by the schema's CHECK constraints (migration
 * 0026), so a row that breaks them cannot be stored by any path.
 */

/** Used in API paths: lowercase letters, digits and hyphens, 2 to 63 characters, no leading hyphen. */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{1,62}$/;

/** Service and partner fees together: at most half of the yield (the engine's MAX_TOTAL_FEE_BPS). */
export const MAX_TOTAL_FEE_BPS = 5000;

/** Why a slug is refused, or undefined when it is valid. */
export function slugError(slug: string): string | undefined {
  return SLUG_PATTERN.test(slug)
    ? undefined
    : 'lowercase letters, digits and hyphens, 2 to 63 characters, not starting with a hyphen';
}

/** Why a pair of fees is refused, or undefined when it is valid. */
export function feesError(serviceFeeBps: number, partnerFeeBps: number): string | undefined {
  for (const v of [serviceFeeBps, partnerFeeBps]) {
    if (!Number.isInteger(v) || v < 0) return 'fees are whole bps, >= 0';
  }
  const total = serviceFeeBps + partnerFeeBps;
  return total > MAX_TOTAL_FEE_BPS
    ? `service and partner fees total ${total} bps; at most ${MAX_TOTAL_FEE_BPS}`
    : undefined;
}
