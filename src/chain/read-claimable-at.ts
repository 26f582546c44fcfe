/**
 * When an engine's redeem request becomes claimable: the engine's `claimableAt(requestId)`, which
 * asks the underlying asynchronous vault. Unix seconds; 0 means claimable at once. Read at a block
 * given by hash (EIP-1898), so the answer is that block's and never a sibling's after a reorg.
 */
import { type Address, encodeFunctionData, type Hex, hexToBigInt } from 'viem';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export async function readClaimableAt(
  client: ChainClient,
  params: { engine: Address; requestId: bigint; blockHash: Hex },
): Promise<bigint> {
  const answer = await client.request({
    method: 'eth_call',
    params: [
      {
        to: params.engine,
        data: encodeFunctionData({
          abi: yieldEngineAbi,
          functionName: 'claimableAt',
          args: [params.requestId],
        }),
      },
      { blockHash: params.blockHash },
    ],
  });
  return hexToBigInt(answer as Hex);
}
