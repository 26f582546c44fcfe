/**
 * Daily rows whose blocks left the canonical chain. Each final row keeps the hash of its boundary
 * block; every run compares the hashes of the rows of the last REORG_CHECK_DAYS days with the chain
 * (a few headers per run: the boundaries are per chain, shared by its products). A reorganisation
 * deeper than the confirmation setting replaces every block after its fork point, so the earliest
 * boundary whose hash changed is the first day that holds a replaced block: that row and every
 * later one of the chain (each is computed from the day before) are removed, and the same run
 * computes them again from the chain as it now is, fee-stats and APY history with them.
 *
 * Alerts (`apy_change`, `tvl_alert`) already stored for a removed day are not sent again.
 */
import type { Hex } from 'viem';
import { getHeaders, MissingBlockError } from '../../chain/block-headers.ts';
import type { ChainClient } from '../../chain/client.ts';
import type { SnapshotsRepo } from '../../db/snapshots.ts';

/** Days of rows checked each run: far deeper than any reorganisation a live network has had. */
export const REORG_CHECK_DAYS = 3;

export interface ReorgCheck {
  /** The first boundary block the chain no longer has (undefined: none). */
  fromBlock: bigint | undefined;
  removed: { productId: string; date: string }[];
}

export async function removeReorgedDays(
  client: ChainClient,
  snapshots: Pick<SnapshotsRepo, 'boundariesSince' | 'removeFromBlock'>,
  chainId: number,
  since: string,
): Promise<ReorgCheck> {
  const boundaries = await snapshots.boundariesSince(chainId, since);
  if (boundaries.length === 0) return { fromBlock: undefined, removed: [] };
  const canonical = new Map<bigint, Hex | undefined>();
  await Promise.all(
    [...new Set(boundaries.map((b) => b.blockNumber))].map(async (n) => {
      try {
        canonical.set(n, (await getHeaders(client, [n])).get(n)?.hash);
      } catch (err) {
        if (!(err instanceof MissingBlockError)) throw err;
        canonical.set(n, undefined); // the chain is shorter now: the block is gone
      }
    }),
  );
  const gone = boundaries.find((b) => canonical.get(b.blockNumber) !== b.blockHash);
  if (!gone) return { fromBlock: undefined, removed: [] };
  return {
    fromBlock: gone.blockNumber,
    removed: await snapshots.removeFromBlock(chainId, gone.blockNumber),
  };
}
