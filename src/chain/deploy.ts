/**
 * The engine's constructor parameters (EngineParams, declared here only) and their encoding, which
 * the lifecycle's deployer (src/sync/lifecycle/deployer.ts) and the local chain send; and direct
 * deployment for tests and benchmarks (`deployContract`, `deployEngine`).
 */
import type { Abi, Address, Hash, Hex } from 'viem';
import type { ChainClient, ChainWallet } from './client.ts';
import { yieldEngineAbi, yieldEngineBytecode } from './generated/YieldEngine.ts';

export interface EngineParams {
  asset: Address;
  underlyingVault: Address;
  name: string;
  symbol: string;
  serviceFeeRecipient: Address;
  partnerFeeRecipient: Address;
  serviceFeeBps: number;
  partnerFeeBps: number;
  /** Owner of the engine: may pause, unpause, deprecate and change fees. */
  operator: Address;
  /**
   * Notice before a fee increase may apply, fixed for the engine's life (decreases apply at once).
   * Default: DEFAULT_FEE_CHANGE_DELAY_SECONDS.
   */
  feeChangeDelaySeconds?: number;
}

/** Seven days: a fee increase is announced on chain a week before it may apply. */
export const DEFAULT_FEE_CHANGE_DELAY_SECONDS = 7 * 86_400;

export interface Deployed {
  address: Address;
  blockNumber: bigint;
  txHash: Hash;
}

/** Deploys any compiled contract and waits for its receipt. */
export async function deployContract(
  walletClient: ChainWallet,
  publicClient: ChainClient,
  abi: Abi,
  bytecode: Hex,
  args: readonly unknown[],
): Promise<Deployed> {
  const txHash = await walletClient.deployContract({ abi, bytecode, args });
  const receipt = await publicClient.waitForTransactionReceipt({ hash: txHash });
  if (receipt.status !== 'success' || !receipt.contractAddress) {
    throw new Error(`deployment ${txHash} failed (status ${receipt.status})`);
  }
  return { address: receipt.contractAddress, blockNumber: receipt.blockNumber, txHash };
}

export function engineConstructorArgs(p: EngineParams) {
  return [
    p.asset,
    p.underlyingVault,
    p.name,
    p.symbol,
    p.serviceFeeRecipient,
    p.partnerFeeRecipient,
    p.serviceFeeBps,
    p.partnerFeeBps,
    p.operator,
    BigInt(p.feeChangeDelaySeconds ?? DEFAULT_FEE_CHANGE_DELAY_SECONDS),
  ] as const;
}

export async function deployEngine(
  walletClient: ChainWallet,
  publicClient: ChainClient,
  params: EngineParams,
): Promise<Deployed> {
  return deployContract(
    walletClient,
    publicClient,
    yieldEngineAbi,
    yieldEngineBytecode,
    engineConstructorArgs(params),
  );
}
