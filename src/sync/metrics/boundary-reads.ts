/**
 * The chain state a day's snapshot is computed from, read at the day's boundary block: the block's
 * time, the engine's figures and pending fees, and the underlying vault's totals. Underlying reads
 * are shared by every engine on the same vault: one read per vault and block.
 */
import type { ChainClient } from '../../chain/client.ts';
import { readEngineFigures } from '../../chain/read-engine-figures.ts';
import { readPendingFees } from '../../chain/read-pending-fees.ts';
import { readVaultTotals, type VaultTotals } from '../../chain/read-vault-totals.ts';
import type { BlockTimes } from '../day-boundary.ts';
import type { BoundaryReads } from './compute.ts';

export interface BoundaryReader {
  read(params: {
    engine: `0x${string}`;
    underlyingVault: `0x${string}`;
    blockNumber: bigint;
    times: BlockTimes;
  }): Promise<BoundaryReads>;
}

export function createBoundaryReader(client: ChainClient): BoundaryReader {
  const underlyingCache = new Map<string, Promise<VaultTotals>>();
  function readUnderlying(vault: `0x${string}`, blockNumber: bigint): Promise<VaultTotals> {
    const key = `${vault}:${blockNumber}`;
    let p = underlyingCache.get(key);
    if (!p) {
      p = readVaultTotals(client, { vault, blockNumber });
      p.catch(() => underlyingCache.delete(key));
      // Bounded: a backfill touches a few hundred blocks per vault; a daily run a handful.
      if (underlyingCache.size > 10_000) underlyingCache.clear();
      underlyingCache.set(key, p);
    }
    return p;
  }

  return {
    async read({ engine, underlyingVault, blockNumber, times }) {
      const [timestamp, engineFigures, pending, vaultTotals] = await Promise.all([
        times.timestamp(blockNumber),
        readEngineFigures(client, { engine, blockNumber }),
        readPendingFees(client, { engine, blockNumber }),
        readUnderlying(underlyingVault, blockNumber),
      ]);
      return {
        blockNumber,
        blockTimestamp: new Date(timestamp * 1000),
        ...engineFigures,
        ...pending,
        underlyingAssets: vaultTotals.totalAssets,
        underlyingSupply: vaultTotals.totalSupply,
      };
    },
  };
}
