/**
 * viem clients for one EVM chain reached over HTTP JSON-RPC. Accounts are passed per call, so the
 * same wallet client can act for any unlocked account of a development node or a local signer.
 */
import {
  type Account,
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';

export type ChainPublicClient = PublicClient<Transport, Chain>;
export type ChainWalletClient = WalletClient<Transport, Chain, Account>;

export function chainDefinition(chainId: number, rpcUrl: string, name = `chain-${chainId}`): Chain {
  return defineChain({
    id: chainId,
    name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

export function createChainPublicClient(rpcUrl: string, chainId: number): ChainPublicClient {
  return createPublicClient({
    chain: chainDefinition(chainId, rpcUrl),
    // Local nodes answer fast; poll often so receipts are seen without delay.
    pollingInterval: 50,
    transport: http(rpcUrl, { batch: true, retryCount: 2 }),
  });
}

/** A wallet client for `account`: a local signer, or the address of an account the node unlocks. */
export function createChainWalletClient(
  rpcUrl: string,
  chainId: number,
  account: Account | Address,
): ChainWalletClient {
  return createWalletClient({
    chain: chainDefinition(chainId, rpcUrl),
    account,
    pollingInterval: 50,
    transport: http(rpcUrl, { retryCount: 0 }),
  }) as ChainWalletClient;
}
