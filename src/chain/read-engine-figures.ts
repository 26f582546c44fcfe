/**
 * An engine's accounting and fee counters at one block: what a snapshot records of the engine. The
 * daily boundary reads and the provisional row at deployment take the same figures the same way.
 */
import type { Address } from 'viem';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export interface EngineFigures {
  engineAssets: bigint;
  engineSupply: bigint;
  /** Fee shares accrued but not yet minted (part of the supply the share price divides by). */
  engineFeeShares: bigint;
  serviceFeeAssetsTotal: bigint;
  partnerFeeAssetsTotal: bigint;
  /**
   * The active pool: `activeAssets()` and `activeSupply()` + the pending fee shares, the price a
   * pool holder gets. Equal to the totals unless open asynchronous requests are counted in them.
   */
  enginePoolAssets: bigint;
  enginePoolSupply: bigint;
}

export async function readEngineFigures(
  client: ChainClient,
  params: { engine: Address; blockNumber: bigint },
): Promise<EngineFigures> {
  const { engine: address, blockNumber } = params;
  const read = <
    F extends
      | 'accountingSnapshot'
      | 'serviceFeeAssetsTotal'
      | 'partnerFeeAssetsTotal'
      | 'activeAssets'
      | 'activeSupply',
  >(
    functionName: F,
  ) => client.readContract({ address, abi: yieldEngineAbi, functionName, blockNumber });
  const [[assets, supply, feeShares], serviceTotal, partnerTotal, poolAssets, poolSupply] =
    await Promise.all([
      read('accountingSnapshot'),
      read('serviceFeeAssetsTotal'),
      read('partnerFeeAssetsTotal'),
      read('activeAssets'),
      read('activeSupply'),
    ]);
  return {
    engineAssets: assets,
    engineSupply: supply,
    engineFeeShares: feeShares,
    serviceFeeAssetsTotal: serviceTotal,
    partnerFeeAssetsTotal: partnerTotal,
    enginePoolAssets: poolAssets,
    enginePoolSupply: poolSupply + feeShares,
  };
}
