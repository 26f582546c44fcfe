/**
 * The account that signs a chain's transactions (engine deployments, pause, resume, deprecate, fee
 * changes), from the chain's `signer` (signer-settings.ts) or, on a local chain, its plaintext
 * `deployerPrivateKey`. The key is read when the account is built and kept only inside viem's
 * account object: no error message, log line or database row ever carries it (the errors here name
 * the variable or the file, never what is in them).
 */

import { readFileSync, statSync } from 'node:fs';
import type { Account, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import type { ChainSettings } from './chains.ts';
import { remoteSignerAccount } from './remote-signer.ts';

export class SignerError extends BaseError<'signer_invalid'> {
  override name = 'SignerError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('signer_invalid', message, options);
  }
}

const KEY = /^(0x)?[0-9a-fA-F]{64}$/;

function keyOf(text: string, where: string): Hex {
  const t = text.trim();
  if (!KEY.test(t)) {
    throw new SignerError(`${where}: expected a private key, 0x and 64 hex digits`);
  }
  return (t.startsWith('0x') ? t : `0x${t}`) as Hex;
}

/**
 * The key in `path`, refused when the file's group or others may read or write it: a key readable
 * by every user of the machine (or of a container image) is a key given away.
 */
export function readKeyFile(path: string, chainId: number): Hex {
  const where = `chain ${chainId}: key file ${path}`;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    throw new SignerError(`${where} cannot be read: check signer.file and the file's owner`);
  }
  if ((mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8).padStart(3, '0');
    throw new SignerError(
      `${where} is open to group or others (mode ${octal}): run \`chmod 600 ${path}\` ` +
        '(owned by the service user) and start again',
    );
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new SignerError(`${where} cannot be read by the service user: check its owner`);
  }
  return keyOf(text, where);
}

/** The signing account of `chain`, or undefined when it has none configured. */
export function signerAccount(
  chain: ChainSettings,
  env: NodeJS.ProcessEnv = process.env,
): Account | undefined {
  const source = chain.signer;
  if (!source) {
    return chain.deployerPrivateKey ? privateKeyToAccount(chain.deployerPrivateKey) : undefined;
  }
  switch (source.kind) {
    case 'env': {
      const value = env[source.variable];
      if (value === undefined || value === '') {
        throw new SignerError(
          `chain ${chain.chainId}: the environment variable ${source.variable} (signer.env) is not set: ` +
            "set it to the deployer's private key in the service's environment",
        );
      }
      return privateKeyToAccount(keyOf(value, `chain ${chain.chainId}: ${source.variable}`));
    }
    case 'file':
      return privateKeyToAccount(readKeyFile(source.path, chain.chainId));
    case 'remote':
      return remoteSignerAccount(source.url, source.address);
  }
}

/** Where the key of `chain` comes from, in words for the CLI and logs (never the key). */
export function describeSigner(chain: ChainSettings): string {
  const s = chain.signer;
  if (!s) return chain.deployerPrivateKey ? 'plaintext key (local chain)' : 'none';
  if (s.kind === 'env') return `environment variable ${s.variable}`;
  if (s.kind === 'file') return `key file ${s.path}`;
  return `remote signer for ${s.address}`;
}
