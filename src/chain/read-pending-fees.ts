/**
 * The fee an engine's next accrual would charge at one block, as asset values split exactly as the
 * accrual splits it (rounding remainder to the partner): the engine's `pendingFees()` view. With the
 * minted counters (read-engine-figures.ts) read at the same block it gives the fees earned so far:
 * earned = minted + pending (DECISIONS, "Fee figures").
 */
import type { Address } from 'viem';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export interface PendingFees {
  servicePendingAssets: bigint;
  partnerPendingAssets: bigint;
}

export async function readPendingFees(
  client: ChainClient,
  params: { engine: Address; blockNumber: bigint },
): Promise<PendingFees> {
  const [service, partner] = await client.readContract({
    address: params.engine,
    abi: yieldEngineAbi,
    functionName: 'pendingFees',
    blockNumber: params.blockNumber,
  });
  return { servicePendingAssets: service, partnerPendingAssets: partner };
}
