/**
 * The one factory for viem clients: a public client (reads, receipts, logs) and a wallet client
 * (signed writes) for a chain reached over its HTTP JSON-RPC URLs, falling back from one URL to the
 * next on failure. Every process role (API, worker, CLI, local chain, tests) builds its clients here,
 * so timeouts, retries and batching are decided in one place.
 */
import {
  type Account,
  type Address,
  type Chain,
  type ChainContract,
  createPublicClient,
  createWalletClient,
  defineChain,
  fallback,
  http,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { retryWhileBehind } from './node-behind.ts';

export type ChainClient = PublicClient<Transport, Chain>;
export type ChainWallet = WalletClient<Transport, Chain, Account>;

/** Where a chain is reached: its id and RPC URLs (tried in order), with a display name. */
export interface ChainEndpoint {
  chainId: number;
  rpcUrls: readonly string[];
  name?: string;
}

export interface ChainClientOptions {
  /** Per request; a hung provider is a failure, not a stall. */
  timeoutMs?: number;
  /** How often receipts and blocks are polled (local nodes answer fast: poll them often). */
  pollingIntervalMs?: number;
  /** Retries of one request on the same URL before falling back to the next. */
  retryCount?: number;
  /** JSON-RPC batching (public clients only; a wallet sends one transaction at a time). */
  batch?: boolean;
  /**
   * Multicall3 on this chain (src/chain/multicall3.ts): contract reads made together at one block
   * go out as one `aggregate3` eth_call instead of one call each.
   */
  multicall3?: ChainContract;
}

/**
 * JSON-RPC calls sent in one HTTP batch at most. Providers cap a batch by its length (100 to 1,000
 * calls) and by its body (anvil refuses a body over 2 MB as a whole, with one `Invalid request`
 * for every call in it): a day's flows of 200 blocks, one aggregate3 per block beside 400 headers,
 * made a 2.2 MB batch that the demo's metrics job could never send. 50 calls stay far under both
 * caps, and reads made together still travel in a few requests.
 */
const JSON_RPC_BATCH_SIZE = 50;

/** Calldata bytes gathered into one aggregate3 call at most (a few hundred product reads). */
const MULTICALL_BATCH_BYTES = 32_768;

export function chainDefinition(
  chainId: number,
  rpcUrl: string,
  name = `chain-${chainId}`,
  multicall3?: ChainContract,
): Chain {
  return defineChain({
    id: chainId,
    name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    ...(multicall3 ? { contracts: { multicall3 } } : {}),
  });
}

function transportOf(endpoint: ChainEndpoint, options: ChainClientOptions, batch: boolean) {
  // Each URL may be a load balancer over nodes at different heights: a read a lagging node could
  // not answer is asked again (src/chain/node-behind.ts) before it counts as a failure.
  const transports = endpoint.rpcUrls.map((url) =>
    retryWhileBehind(
      http(url, {
        batch: batch ? { batchSize: JSON_RPC_BATCH_SIZE, wait: 0 } : false,
        retryCount: options.retryCount ?? 1,
        timeout: options.timeoutMs ?? 10_000,
      }),
    ),
  );
  if (transports.length === 0) throw new Error(`chain ${endpoint.chainId}: no RPC URL`);
  return transports.length === 1 ? transports[0]! : fallback(transports);
}

/** A public client over every RPC URL of the chain. */
export function createChainClient(
  endpoint: ChainEndpoint,
  options: ChainClientOptions = {},
): ChainClient {
  return createPublicClient({
    chain: chainDefinition(
      endpoint.chainId,
      endpoint.rpcUrls[0]!,
      endpoint.name,
      options.multicall3,
    ),
    pollingInterval: options.pollingIntervalMs ?? 200,
    transport: transportOf(endpoint, options, options.batch ?? true),
    ...(options.multicall3
      ? { batch: { multicall: { batchSize: MULTICALL_BATCH_BYTES, wait: 0 } } }
      : {}),
  });
}

/** A wallet client for `account`: a local signer, or the address of an account the node unlocks. */
export function createChainWallet(
  endpoint: ChainEndpoint,
  account: Account | Address,
  options: ChainClientOptions = {},
): ChainWallet {
  return createWalletClient({
    chain: chainDefinition(endpoint.chainId, endpoint.rpcUrls[0]!, endpoint.name),
    account,
    pollingInterval: options.pollingIntervalMs ?? 200,
    transport: transportOf(endpoint, options, false),
  }) as ChainWallet;
}

/** A local development node (anvil) answers fast: poll it often, retry a read on a busy node. */
export const LOCAL_NODE_CLIENT: ChainClientOptions = { pollingIntervalMs: 50, retryCount: 2 };
/** Never retried: a transaction sent twice by an unlocked account would be two transactions. */
export const LOCAL_NODE_WALLET: ChainClientOptions = { pollingIntervalMs: 50, retryCount: 0 };

/** One endpoint from a single RPC URL. */
export function endpointOf(rpcUrl: string, chainId: number): ChainEndpoint {
  return { chainId, rpcUrls: [rpcUrl] };
}
