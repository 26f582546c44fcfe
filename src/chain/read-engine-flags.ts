/** An engine's pause and deprecation flags at a block (latest when absent). */
import type { Address } from 'viem';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export interface EngineFlags {
  paused: boolean;
  deprecated: boolean;
}

export async function readEngineFlags(
  client: ChainClient,
  params: { engine: Address; blockNumber?: bigint },
): Promise<EngineFlags> {
  const { engine: address, blockNumber } = params;
  const [paused, deprecated] = await Promise.all([
    client.readContract({ address, abi: yieldEngineAbi, functionName: 'paused', blockNumber }),
    client.readContract({ address, abi: yieldEngineAbi, functionName: 'deprecated', blockNumber }),
  ]);
  return { paused, deprecated };
}
