/**
 * The signer and transaction settings of a CHAINS_FILE entry, parsed apart from the rest of the
 * chain (chains.ts calls `parseSignerSettings` once per entry) so that the chain's own settings
 * and these evolve without touching each other.
 *
 * Where the deployer's key comes from (`signer`):
 *   { "env": "BASE_DEPLOYER_KEY" }                 the key in an environment variable
 *   { "file": "/run/secrets/base-deployer.key" }   the key in a file only its owner may read
 *   { "url": "http://127.0.0.1:9000", "address": "0x…" }
 *                                                  a remote signer (Web3Signer, Clef, a KMS or HSM
 *                                                  front) answering JSON-RPC eth_signTransaction
 * The plaintext `deployer_private_key` is accepted only for a development chain: chain id 31337 or
 * 1337, or an entry marked `"local": true` (an anvil started with a public chain's id, as in a
 * rehearsal). A key typed into a config file for a public network ends up in backups, tickets and
 * screenshots; refusing it costs the operator one line of configuration.
 *
 * Transactions (see tx-sender.ts): `max_fee_per_gas_gwei` caps what a transaction may pay per gas
 * (its first send and every replacement); `replace_after_blocks` is how many blocks a transaction
 * may wait unmined before it is replaced at the same nonce with higher fees.
 */
import { type Address, getAddress, isAddress, parseGwei } from 'viem';
import { registerUrlSecrets } from '../url-secrets.ts';
import { ChainsFileError, LOCAL_CHAIN_IDS, refuseUnknownKeys } from './chains-file-error.ts';

export type SignerSource =
  | { kind: 'env'; variable: string }
  | { kind: 'file'; path: string }
  | { kind: 'remote'; url: string; address: Address };

export interface TransactionPolicy {
  /** Ceiling on maxFeePerGas, in wei, for a first send and for every replacement. */
  maxFeePerGas: bigint;
  /** Blocks a transaction may stay unmined before it is replaced with bumped fees. */
  replaceAfterBlocks: number;
}

/** 100 gwei: above Ethereum's usual base fee, far above the rollups'; set it per chain. */
export const DEFAULT_MAX_FEE_PER_GAS_GWEI = '100';
export const DEFAULT_REPLACE_AFTER_BLOCKS = 10;

export const DEFAULT_TRANSACTION_POLICY: TransactionPolicy = {
  maxFeePerGas: parseGwei(DEFAULT_MAX_FEE_PER_GAS_GWEI),
  replaceAfterBlocks: DEFAULT_REPLACE_AFTER_BLOCKS,
};

export interface SignerSettings {
  signer?: SignerSource;
  /** Marked `"local": true`: a development node, whatever its chain id. */
  local?: boolean;
  transactions?: TransactionPolicy;
}

/** Whether a chain is a development chain, where a plaintext key is allowed. */
export function isLocalChain(chainId: number, local: boolean | undefined): boolean {
  return local === true || LOCAL_CHAIN_IDS.has(chainId);
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function parseSigner(raw: unknown, where: string): SignerSource {
  const s = raw as Record<string, unknown> | null;
  if (typeof s !== 'object' || s === null || Array.isArray(s)) {
    throw new ChainsFileError(
      `${where}.signer: expected {"env": NAME}, {"file": PATH} or {"url": URL, "address": 0x…}`,
    );
  }
  refuseUnknownKeys(s, ['env', 'file', 'url', 'address'], `${where}.signer`);
  const kinds = ['env', 'file', 'url'].filter((k) => s[k] !== undefined);
  if (kinds.length !== 1) {
    throw new ChainsFileError(`${where}.signer: set exactly one of "env", "file" or "url"`);
  }
  if (s.env !== undefined) {
    if (typeof s.env !== 'string' || !ENV_NAME.test(s.env)) {
      throw new ChainsFileError(`${where}.signer.env: expected an environment variable's name`);
    }
    return { kind: 'env', variable: s.env };
  }
  if (s.file !== undefined) {
    if (typeof s.file !== 'string' || s.file.length === 0) {
      throw new ChainsFileError(`${where}.signer.file: expected the path of the key file`);
    }
    return { kind: 'file', path: s.file };
  }
  if (typeof s.url !== 'string' || !/^https?:\/\//.test(s.url)) {
    throw new ChainsFileError(`${where}.signer.url: expected the http(s) URL of the signer`);
  }
  if (typeof s.address !== 'string' || !isAddress(s.address, { strict: false })) {
    throw new ChainsFileError(
      `${where}.signer.address: expected the address the remote signer signs for`,
    );
  }
  // A signer URL may carry credentials (user:password@, a token in the path): never logged.
  registerUrlSecrets(s.url);
  return { kind: 'remote', url: s.url, address: getAddress(s.address) };
}

function parsePolicy(c: Record<string, unknown>, where: string): TransactionPolicy | undefined {
  const cap = c.max_fee_per_gas_gwei;
  const after = c.replace_after_blocks;
  if (cap === undefined && after === undefined) return undefined;
  let maxFeePerGas = DEFAULT_TRANSACTION_POLICY.maxFeePerGas;
  if (cap !== undefined) {
    // A number or a decimal string ("0.5" on a rollup); parsed to wei exactly, never as a float.
    const text = typeof cap === 'number' ? String(cap) : cap;
    if (typeof text !== 'string' || !/^\d+(\.\d{1,9})?$/.test(text) || parseGwei(text) <= 0n) {
      throw new ChainsFileError(
        `${where}.max_fee_per_gas_gwei: expected a positive number of gwei (at most 9 decimals)`,
      );
    }
    maxFeePerGas = parseGwei(text);
  }
  let replaceAfterBlocks = DEFAULT_TRANSACTION_POLICY.replaceAfterBlocks;
  if (after !== undefined) {
    if (typeof after !== 'number' || !Number.isInteger(after) || after < 1) {
      throw new ChainsFileError(`${where}.replace_after_blocks: expected an integer >= 1`);
    }
    replaceAfterBlocks = after;
  }
  return { maxFeePerGas, replaceAfterBlocks };
}

/**
 * The signer, `local` flag and transaction policy of entry `c` (at `where`, for `chainId`);
 * refuses a plaintext `deployer_private_key` on a chain that is not local, and a chain with both
 * a plaintext key and a `signer`.
 */
export function parseSignerSettings(
  c: Record<string, unknown>,
  where: string,
  chainId: number,
): SignerSettings {
  if (c.local !== undefined && typeof c.local !== 'boolean') {
    throw new ChainsFileError(`${where}.local: expected true or false`);
  }
  const local = c.local === true;
  const signer = c.signer === undefined ? undefined : parseSigner(c.signer, `${where}`);
  if (c.deployer_private_key !== undefined) {
    if (signer) {
      throw new ChainsFileError(
        `${where}: both deployer_private_key and signer are set; keep only "signer"`,
      );
    }
    if (!isLocalChain(chainId, local)) {
      // The message never repeats the key.
      throw new ChainsFileError(
        `${where}.deployer_private_key: a plaintext key is refused for chain ${chainId}, which is ` +
          'not a local development chain. Remove it from the file and set "signer" to ' +
          '{"env": "VARIABLE"} (the key in an environment variable), {"file": "/path"} (a file ' +
          'only its owner can read, chmod 600) or {"url": "http://…", "address": "0x…"} (a ' +
          'remote signer); see docs/maintainers/going-live.md, "The signer"',
      );
    }
  }
  const transactions = parsePolicy(c, where);
  return {
    ...(signer ? { signer } : {}),
    ...(local ? { local } : {}),
    ...(transactions ? { transactions } : {}),
  };
}
