/**
 * The chain reads behind a snapshot, at one block: the engine's accounting and fee counters, and
 * the underlying vault's totals. The daily boundary reads (metrics.ts) and the provisional row at
 * deployment (provisional.ts) take the same figures the same way, so they share these.
 */
import type { SyncPublicClient } from '../../chain/chains.ts';
import { yieldEngineAbi, yieldVaultAbi } from '../../chain/generated/index.ts';

export interface EngineFigures {
  engineAssets: bigint;
  engineSupply: bigint;
  /** Fee shares accrued but not yet minted (part of the supply the share price divides by). */
  engineFeeShares: bigint;
  serviceFeeAssetsTotal: bigint;
  partnerFeeAssetsTotal: bigint;
}

export async function readEngineFigures(
  client: SyncPublicClient,
  engine: `0x${string}`,
  blockNumber: bigint,
): Promise<EngineFigures> {
  const read = <F extends 'accountingSnapshot' | 'serviceFeeAssetsTotal' | 'partnerFeeAssetsTotal'>(
    functionName: F,
  ) => client.readContract({ address: engine, abi: yieldEngineAbi, functionName, blockNumber });
  const [[assets, supply, feeShares], serviceTotal, partnerTotal] = await Promise.all([
    read('accountingSnapshot'),
    read('serviceFeeAssetsTotal'),
    read('partnerFeeAssetsTotal'),
  ]);
  return {
    engineAssets: assets,
    engineSupply: supply,
    engineFeeShares: feeShares,
    serviceFeeAssetsTotal: serviceTotal,
    partnerFeeAssetsTotal: partnerTotal,
  };
}

/** The underlying vault's [totalAssets, totalSupply]. */
export function readVaultTotals(
  client: SyncPublicClient,
  vault: `0x${string}`,
  blockNumber: bigint,
): Promise<[bigint, bigint]> {
  return Promise.all([
    client.readContract({
      address: vault,
      abi: yieldVaultAbi,
      functionName: 'totalAssets',
      blockNumber,
    }),
    client.readContract({
      address: vault,
      abi: yieldVaultAbi,
      functionName: 'totalSupply',
      blockNumber,
    }),
  ]);
}
