/** A wallet's position in an ERC-4626 vault (an engine) at one block: its shares and their assets. */
import { type Address, erc4626Abi } from 'viem';
import type { ChainClient } from './client.ts';

export interface Position {
  shares: bigint;
  assets: bigint;
}

export async function readPosition(
  client: ChainClient,
  params: { vault: Address; owner: Address; blockNumber?: bigint },
): Promise<Position> {
  const { vault, owner, blockNumber } = params;
  const shares = await client.readContract({
    address: vault,
    abi: erc4626Abi,
    functionName: 'balanceOf',
    args: [owner],
    blockNumber,
  });
  // No shares, no second call: convertToAssets(0) is 0 on every vault.
  if (shares === 0n) return { shares, assets: 0n };
  const assets = await client.readContract({
    address: vault,
    abi: erc4626Abi,
    functionName: 'convertToAssets',
    args: [shares],
    blockNumber,
  });
  return { shares, assets };
}
