/**
 * What CHAINS_FILE parsing shares between its parts (chains.ts and signer-settings.ts): the error a
 * bad file raises, and the chain ids counted as local development chains. Its own module so those
 * two do not import each other.
 */

import { BaseError, type BaseErrorOptions } from '../errors.ts';

/** Chain ids of local development nodes (anvil, Hardhat, Ganache), where depth 0 is allowed. */
export const LOCAL_CHAIN_IDS: ReadonlySet<number> = new Set([31337, 1337]);

export class ChainsFileError extends BaseError<'chains_file_invalid'> {
  override name = 'ChainsFileError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('chains_file_invalid', message, options);
  }
}

/**
 * Refuses a key of `entry` that is not one of `known`: a misspelt optional field (the fee cap, say)
 * would otherwise be ignored and its default used in silence. Names the key and the closest known
 * one, or lists them when none is close.
 */
export function refuseUnknownKeys(
  entry: Record<string, unknown>,
  known: readonly string[],
  where: string,
): void {
  for (const key of Object.keys(entry)) {
    if (known.includes(key)) continue;
    const closest = closestKey(key, known);
    throw new ChainsFileError(
      `${where}: unknown key "${key}"${
        closest ? `: did you mean "${closest}"?` : `; expected one of ${known.join(', ')}`
      }`,
    );
  }
}

/** The known key `key` is most likely a misspelling of, if any is close enough. */
function closestKey(key: string, known: readonly string[]): string | undefined {
  const k = key.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    // One is the other with a part left off or added (max_fee_per_gas for max_fee_per_gas_gwei).
    if (k.length >= 3 && (name.startsWith(k) || k.startsWith(name))) {
      const d = Math.abs(name.length - k.length) / 2;
      if (!best || d < best.distance) best = { name, distance: d };
      continue;
    }
    const d = editDistance(k, name);
    if (!best || d < best.distance) best = { name, distance: d };
  }
  return best && best.distance <= Math.max(2, Math.floor(key.length / 3)) ? best.name : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}
