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
