/** The decimals of a vault's share token (an engine's shares), at a block (latest when absent). */
import { type Address, erc20Abi } from 'viem';
import type { ChainClient } from './client.ts';

export function readShareDecimals(
  client: ChainClient,
  params: { vault: Address; blockNumber?: bigint },
): Promise<number> {
  return client.readContract({
    address: params.vault,
    abi: erc20Abi,
    functionName: 'decimals',
    blockNumber: params.blockNumber,
  });
}
