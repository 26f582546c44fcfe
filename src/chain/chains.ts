/**
 * The chains the service follows. Configured by a JSON file (CHAINS_FILE); with none, the embedded
 * local anvil chain is the only chain. Each chain has its RPC URLs (tried in order, falling back on
 * failure), the confirmation depth below which logs are final, and the largest block range its
 * provider accepts in one eth_getLogs.
 */
import { readFileSync } from 'node:fs';
import type { Hex } from 'viem';
import { registerUrlSecrets } from '../url-secrets.ts';
import { ChainsFileError, LOCAL_CHAIN_IDS, refuseUnknownKeys } from './chains-file-error.ts';
import { parseSignerSettings, type SignerSettings } from './signer-settings.ts';

export { ChainsFileError, LOCAL_CHAIN_IDS };

/** Signer and transaction settings (signer-settings.ts) are part of a chain's settings. */
export interface ChainSettings extends SignerSettings {
  chainId: number;
  name: string;
  rpcUrls: string[];
  /**
   * Blocks under the head before a block counts as final (when `finalityTag` is unset). Depth 0 is
   * refused for every chain but a local development chain (LOCAL_CHAIN_IDS).
   */
  confirmationDepth: number;
  /**
   * Final is what the node's `finalized` or `safe` block tag says (post-merge Ethereum and the
   * rollups that follow it), instead of a depth. See docs/maintainers/operations.md, "Finality per network".
   */
  finalityTag?: FinalityTag;
  blockRangeLimit: number;
  /** False for a chain whose addresses are not EVM addresses (position answers chain_not_supported). */
  evm: boolean;
  /**
   * Key of the account that deploys engines and sends operator transactions on this chain, typed
   * into CHAINS_FILE: local development chains only (signer-settings.ts; else `signer`).
   */
  deployerPrivateKey?: Hex;
}

export type FinalityTag = 'finalized' | 'safe';

export const LOCAL_CHAIN_DEFAULTS = {
  name: 'Local (anvil)',
  confirmationDepth: 2,
  blockRangeLimit: 10_000,
} as const;

/** Every key a CHAINS_FILE entry may have; any other is refused (a misspelling, most likely). */
const CHAIN_KEYS = [
  'chain_id',
  'name',
  'rpc_urls',
  'confirmation_depth',
  'finality',
  'block_range_limit',
  'evm',
  'signer',
  'max_fee_per_gas_gwei',
  'replace_after_blocks',
  'local',
  'deployer_private_key',
] as const;

/**
 * Parses CHAINS_FILE content: `[{ chain_id, name, rpc_urls, confirmation_depth | finality,
 * block_range_limit, evm?, deployer_private_key? }]`. `finality` is `"finalized"` or `"safe"`;
 * with it, `confirmation_depth` may be left out.
 */
export function parseChainsFile(text: string, file = 'CHAINS_FILE'): ChainSettings[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ChainsFileError(`${file}: not valid JSON${jsonErrorPlace(text, err)}`);
  }
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new ChainsFileError(`${file}: expected a non-empty JSON array of chains`);
  }
  const seen = new Set<number>();
  return raw.map((c: Record<string, unknown>, i) => {
    const where = `${file}[${i}]`;
    if (typeof c !== 'object' || c === null || Array.isArray(c)) {
      throw new ChainsFileError(`${where}: expected an object (one chain)`);
    }
    refuseUnknownKeys(c, CHAIN_KEYS, where);
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
    // Keys in provider URLs never reach a log line (src/url-secrets.ts).
    for (const u of urls as string[]) registerUrlSecrets(u);
    const key = c.deployer_private_key;
    if (key !== undefined && (typeof key !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(key))) {
      throw new ChainsFileError(`${where}.deployer_private_key: expected 0x and 64 hex digits`);
    }
    const finality = c.finality;
    if (finality !== undefined && finality !== 'finalized' && finality !== 'safe') {
      throw new ChainsFileError(
        `${where}.finality: expected "finalized" or "safe" (or leave it out and set confirmation_depth)`,
      );
    }
    const depth =
      finality !== undefined && c.confirmation_depth === undefined
        ? 0
        : int('confirmation_depth', 0);
    if (finality === undefined && depth === 0 && !LOCAL_CHAIN_IDS.has(chainId)) {
      throw new ChainsFileError(
        `${where}.confirmation_depth: 0 would treat every new block as final on chain ${chainId}; ` +
          'set a depth of at least 1 or "finality": "finalized" (see docs/maintainers/operations.md, "Finality per network")',
      );
    }
    return {
      chainId,
      name: typeof c.name === 'string' && c.name ? c.name : `chain-${chainId}`,
      rpcUrls: urls as string[],
      confirmationDepth: depth,
      ...(finality ? { finalityTag: finality as FinalityTag } : {}),
      blockRangeLimit: int('block_range_limit', 1),
      evm: c.evm === undefined ? true : c.evm === true,
      ...(key ? { deployerPrivateKey: key as Hex } : {}),
      ...parseSignerSettings(c, where, chainId),
    };
  });
}

/**
 * Where JSON.parse stopped, as `(line 3, column 5: Expected ',' or '}' after property value)`, when
 * its message gives a position (V8 does: "… in JSON at position 42"); else its message alone.
 */
function jsonErrorPlace(text: string, err: unknown): string {
  const message = err instanceof Error ? err.message : '';
  const at = /at position (\d+)/.exec(message);
  const what = message
    .replace(/\s*in JSON at position \d+.*$/s, '')
    .replace(/\s*\(line \d+ column \d+\)$/, '');
  if (!at) return what ? ` (${what})` : '';
  const position = Number(at[1]);
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return ` (line ${line}, column ${column}${what ? `: ${what}` : ''})`;
}

/** The OS's reason a file cannot be read, in words an operator acts on. */
function readFailure(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file (ENOENT): check the path';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code}): the service user must be able to read it`;
    case 'EISDIR':
      return 'it is a directory (EISDIR): name the JSON file';
    default:
      return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
  }
}

export function readChainsFile(file: string): ChainSettings[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ChainsFileError(`CHAINS_FILE: cannot read "${file}": ${readFailure(err)}`);
  }
  return parseChainsFile(text, `CHAINS_FILE "${file}"`);
}
