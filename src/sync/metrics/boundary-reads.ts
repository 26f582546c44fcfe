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
    read: ({ engine, underlyingVault, blockNumber, times }) =>
      readBoundaryState(client, {
        engine,
        blockNumber,
        blockTimestamp: times.timestamp(blockNumber).then((t) => new Date(t * 1000)),
        underlyingTotals: readUnderlying(underlyingVault, blockNumber),
      }),
  };
}

/**
 * The engine's figures and pending fees at `blockNumber`, with the block's time and the underlying
 * vault's totals the caller reads (or has cached), as one BoundaryReads. The daily rows and the
 * provisional deployment-day row (provisional.ts) read the same state this way.
 */
export async function readBoundaryState(
  client: ChainClient,
  params: {
    engine: `0x${string}`;
    blockNumber: bigint;
    blockTimestamp: Date | Promise<Date>;
    underlyingTotals: Promise<VaultTotals>;
  },
): Promise<BoundaryReads> {
  const { engine, blockNumber } = params;
  const [blockTimestamp, engineFigures, pending, vaultTotals] = await Promise.all([
    params.blockTimestamp,
    readEngineFigures(client, { engine, blockNumber }),
    readPendingFees(client, { engine, blockNumber }),
    params.underlyingTotals,
  ]);
  return {
    blockNumber,
    blockTimestamp,
    ...engineFigures,
    ...pending,
    underlyingAssets: vaultTotals.totalAssets,
    underlyingSupply: vaultTotals.totalSupply,
  };
}
