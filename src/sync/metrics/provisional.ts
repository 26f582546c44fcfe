/**
 * The provisional snapshot a product gets when it becomes active (DECISIONS: latest_metrics is null
 * only while pending_deploy; the first snapshot is written when the product becomes active). The
 * lifecycle writes it in the same transaction as the move to `active` and `product.deployed`.
 *
 * It is the deployment day's row at the DEPLOYMENT block, read with the same calls as the daily
 * boundary reads (metrics.ts readBoundary): engine accountingSnapshot (total assets; supply plus
 * pending fee shares), the cumulative fee counters and the pending fees, the underlying vault's totalAssets and
 * totalSupply. Right after deployment the engine is empty, so its figures are typically 0.
 * - APYs are null: there is no previous day (as on any first day). The row carries instead the
 *   launch-day ESTIMATE (underlying-estimate.ts): the underlying vault's APY over the last day
 *   finished before the deployment, with the engine's fees applied; the API serves it labelled
 *   `apy_basis: "underlying_estimate"` until the engine has a full day of its own.
 * - Daily figures (yield and fees of the day) are null, not 0: the day is not over, and a 0 would
 *   read as a measured quiet day. fee-stats lists only rows with daily figures, so it never shows
 *   this row. Flows (deposits, withdrawals) are 0: none before the deployment block.
 * - `provisional` is true: the metrics processor replaces the row with the real one when the day
 *   closes, and never treats it as covering its day or as a previous day.
 */
import type { ChainClient } from '../../chain/client.ts';
import { readVaultTotals } from '../../chain/read-vault-totals.ts';
import type { Snapshot } from '../../db/snapshots.ts';
import { addDays } from '../day-boundary.ts';
import { readBoundaryState } from './boundary-reads.ts';
import { type BoundaryReads, boundaryState } from './compute.ts';
import { type ApyEstimate, readUnderlyingEstimate } from './underlying-estimate.ts';

/** The provisional row of `date` from the reads at the deployment block. Pure. */
export function provisionalSnapshot(
  productId: string,
  date: string,
  reads: BoundaryReads,
  estimate: ApyEstimate | null = null,
): Snapshot {
  return {
    productId,
    date,
    ...boundaryState(reads),
    depositsAssets: 0n,
    withdrawalsAssets: 0n,
    underlyingApy: null,
    netApyForUser: null,
    dailyYieldAssets: null,
    dailyPartnerFee: null,
    dailyServiceFee: null,
    provisional: true,
    estimatedUnderlyingApy: estimate?.underlyingApy ?? null,
    estimatedNetApy: estimate?.netApyForUser ?? null,
  };
}

/** Reads the chain at the deployment block and builds the provisional row of its UTC day. */
export async function readProvisionalSnapshot(
  client: ChainClient,
  args: {
    productId: string;
    engine: `0x${string}`;
    underlyingVault: `0x${string}`;
    blockNumber: bigint;
    blockTimestamp: Date;
    /** service_fee_bps + partner_fee_bps, for the launch-day estimate. */
    totalFeeBps: number;
  },
): Promise<Snapshot> {
  const { engine, underlyingVault: vault, blockNumber } = args;
  const date = args.blockTimestamp.toISOString().slice(0, 10);
  const [reads, estimate] = await Promise.all([
    readBoundaryState(client, {
      engine,
      blockNumber,
      blockTimestamp: args.blockTimestamp,
      underlyingTotals: readVaultTotals(client, { vault, blockNumber }),
    }),
    readUnderlyingEstimate(client, {
      vault,
      day: addDays(date, -1),
      totalFeeBps: args.totalFeeBps,
      hi: blockNumber,
    }),
  ]);
  return provisionalSnapshot(args.productId, date, reads, estimate);
}
