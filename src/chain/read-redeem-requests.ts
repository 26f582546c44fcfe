/**
 * The live state of a wallet's redeem requests on an engine at one block: for each id, whether it
 * is claimed, claimable now (the engine's ERC-7540 `claimableRedeemRequest` for the wallet as
 * controller), and the vault's schedule (`claimableAt`, 0 when it publishes none).
 */
import type { Address } from 'viem';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export interface RequestReading {
  requestId: bigint;
  shares: bigint;
  claimed: boolean;
  claimable: boolean;
  /** Unix seconds; 0 when the underlying publishes no schedule. */
  claimableAt: bigint;
}

export async function readRedeemRequests(
  client: ChainClient,
  params: { engine: Address; controller: Address; ids: readonly bigint[]; blockNumber: bigint },
): Promise<RequestReading[]> {
  const { engine, controller, blockNumber } = params;
  return Promise.all(
    params.ids.map(async (requestId) => {
      const [r, claimableShares, claimableAt] = await Promise.all([
        client.readContract({
          address: engine,
          abi: yieldEngineAbi,
          functionName: 'redeemRequest',
          args: [requestId],
          blockNumber,
        }),
        client.readContract({
          address: engine,
          abi: yieldEngineAbi,
          functionName: 'claimableRedeemRequest',
          args: [requestId, controller],
          blockNumber,
        }),
        client.readContract({
          address: engine,
          abi: yieldEngineAbi,
          functionName: 'claimableAt',
          args: [requestId],
          blockNumber,
        }),
      ]);
      const req = r as { shares: bigint; claimed: boolean };
      return {
        requestId,
        shares: req.shares,
        claimed: req.claimed,
        claimable: (claimableShares as bigint) > 0n,
        claimableAt: claimableAt as bigint,
      };
    }),
  );
}
