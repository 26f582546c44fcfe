/** An ERC-4626 vault's totals at one block: the price of its share is assets / supply. */
import { type Address, erc4626Abi } from 'viem';
import type { ChainClient } from './client.ts';

export interface VaultTotals {
  totalAssets: bigint;
  totalSupply: bigint;
}

export async function readVaultTotals(
  client: ChainClient,
  params: { vault: Address; blockNumber: bigint },
): Promise<VaultTotals> {
  const { vault: address, blockNumber } = params;
  const [totalAssets, totalSupply] = await Promise.all([
    client.readContract({ address, abi: erc4626Abi, functionName: 'totalAssets', blockNumber }),
    client.readContract({ address, abi: erc4626Abi, functionName: 'totalSupply', blockNumber }),
  ]);
  return { totalAssets, totalSupply };
}
