/**
 * The fees an engine charges now (`serviceFeeBps`/`partnerFeeBps`), at a block (latest when absent).
 * A scheduled increase is not in force until `applyFeeChange()` applied it: see
 * read-scheduled-fee-change.ts for that one.
 */
import type { Address } from 'viem';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export interface FeesInForce {
  serviceFeeBps: number;
  partnerFeeBps: number;
}

export async function readFeesInForce(
  client: ChainClient,
  params: { engine: Address; blockNumber?: bigint },
): Promise<FeesInForce> {
  const { engine: address, blockNumber } = params;
  const [serviceFeeBps, partnerFeeBps] = await Promise.all([
    client.readContract({
      address,
      abi: yieldEngineAbi,
      functionName: 'serviceFeeBps',
      blockNumber,
    }),
    client.readContract({
      address,
      abi: yieldEngineAbi,
      functionName: 'partnerFeeBps',
      blockNumber,
    }),
  ]);
  return { serviceFeeBps, partnerFeeBps };
}
