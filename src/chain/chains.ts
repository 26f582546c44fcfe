/**
 * The chains the service follows. Configured by a JSON file (CHAINS_FILE); with none, the embedded
 * local anvil chain is the only chain. Each chain has its RPC URLs (tried in order, falling back on
 * failure), the confirmation depth below which logs are final, and the largest block range its
 * provider accepts in one eth_getLogs.
 */
import { readFileSync } from 'node:fs';
import type { Hex } from 'viem';

export interface ChainSettings {
  chainId: number;
  name: string;
  rpcUrls: string[];
  confirmationDepth: number;
  blockRangeLimit: number;
  /** False for a chain whose addresses are not EVM addresses (position answers chain_not_supported). */
  evm: boolean;
  /** Key of the account that deploys engines and sends operator transactions on this chain. */
  deployerPrivateKey?: Hex;
}

export const LOCAL_CHAIN_DEFAULTS = {
  name: 'Local (anvil)',
  confirmationDepth: 2,
  blockRangeLimit: 10_000,
} as const;

export class ChainsFileError extends Error {
  override name = 'ChainsFileError';
}

/** Parses CHAINS_FILE content: `[{ chain_id, name, rpc_urls, confirmation_depth, block_range_limit, evm?, deployer_private_key? }]`. */
export function parseChainsFile(text: string, file = 'CHAINS_FILE'): ChainSettings[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ChainsFileError(`${file}: not valid JSON`);
  }
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new ChainsFileError(`${file}: expected a non-empty JSON array of chains`);
  }
  const seen = new Set<number>();
  return raw.map((c: Record<string, unknown>, i) => {
    const where = `${file}[${i}]`;
    const int = (key: string, min: number) => {
      const v = c[key];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
        throw new ChainsFileError(`${where}.${key}: expected an integer >= ${min}`);
      }
      return v;
    };
    const chainId = int('chain_id', 1);
    if (seen.has(chainId)) throw new ChainsFileError(`${where}.chain_id: ${chainId} appears twice`);
    seen.add(chainId);
    const urls = c.rpc_urls;
    if (
      !Array.isArray(urls) ||
      urls.length === 0 ||
      !urls.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))
    ) {
      throw new ChainsFileError(`${where}.rpc_urls: expected a non-empty array of http(s) URLs`);
    }
    const key = c.deployer_private_key;
    if (key !== undefined && (typeof key !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(key))) {
      throw new ChainsFileError(`${where}.deployer_private_key: expected 0x and 64 hex digits`);
    }
    return {
      chainId,
      name: typeof c.name === 'string' && c.name ? c.name : `chain-${chainId}`,
      rpcUrls: urls as string[],
      confirmationDepth: int('confirmation_depth', 0),
      blockRangeLimit: int('block_range_limit', 1),
      evm: c.evm === undefined ? true : c.evm === true,
      ...(key ? { deployerPrivateKey: key as Hex } : {}),
    };
  });
}

export function readChainsFile(file: string): ChainSettings[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new ChainsFileError(`CHAINS_FILE: cannot read "${file}"`);
  }
  return parseChainsFile(text, `CHAINS_FILE "${file}"`);
}
