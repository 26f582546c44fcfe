/**
 * The pure part of the daily metrics: one day's snapshot from the chain reads at its boundary block,
 * the flows of the day and the previous day's row; and the operational alerts a day raises. No I/O,
 * bigint only, so the same inputs always give the same row, byte for byte.
 */

import type { EngineFigures } from '../../chain/read-engine-figures.ts';
import type { PendingFees } from '../../chain/read-pending-fees.ts';
import type { Snapshot } from '../../db/snapshots.ts';
import {
  apyFromSharePrices,
  changePct,
  decimalToJsonNumber,
  exceedsThreshold,
  formatUnits,
  sharePrice,
} from '../../money/index.ts';
import { outboundPayload } from '../../webhooks/event-catalogue.ts';
import { daysBetween } from '../day-boundary.ts';

/**
 * Chain state at a boundary block, as read from the engine (accountingSnapshot: totalAssets, ERC-20
 * totalSupply, fee shares pending at the block; the minted fee counters; pendingFees(): the asset
 * value of the fee pending at the block, split) and its underlying vault.
 */
export interface BoundaryReads extends EngineFigures, PendingFees {
  blockNumber: bigint;
  blockTimestamp: Date;
  underlyingAssets: bigint;
  underlyingSupply: bigint;
}

export interface DayFlows {
  deposits: bigint;
  withdrawals: bigint;
}

/** The columns of a day's row that are the chain's state at its boundary block, as read. */
export function boundaryState(reads: BoundaryReads) {
  return {
    blockNumber: reads.blockNumber,
    blockTimestamp: reads.blockTimestamp,
    engineTotalAssets: reads.engineAssets,
    engineTotalSupply: reads.engineSupply + reads.engineFeeShares,
    enginePoolAssets: reads.enginePoolAssets,
    enginePoolSupply: reads.enginePoolSupply,
    underlyingTotalAssets: reads.underlyingAssets,
    underlyingTotalSupply: reads.underlyingSupply,
    serviceFeeAssetsTotal: reads.serviceFeeAssetsTotal,
    partnerFeeAssetsTotal: reads.partnerFeeAssetsTotal,
    serviceFeePending: reads.servicePendingAssets,
    partnerFeePending: reads.partnerPendingAssets,
  } satisfies Partial<Snapshot>;
}

/**
 * The snapshot of `date`. `prev` is the row of the previous day, or null on the engine's first day.
 *
 * - Share prices: the engine's is the active pool's assets / (supply + pending fee shares), the net
 *   price a pool holder gets (README, "Contracts and the local chain"; issue #28: on an
 *   asynchronous product the totals also count open redeem requests, which follow the underlying
 *   until they settle and pay their fee at the claim, so net_apy_for_user is the pool's). A previous
 *   row written before migration 0040 has no pool figures: both prices then come from the totals,
 *   as that row's APY was computed. The underlying's price is its totalAssets/totalSupply.
 *   APYs need a previous row, so the first day has none (null), as does a day where either price is
 *   undefined (empty vault): absent, never invented.
 * - Fees (DECISIONS, "Fee figures"): the fee EARNED up to a boundary is the engine's cumulative
 *   minted counter plus its pending fee at that block (pendingFees(): what the next accrual would
 *   charge, split as it splits it), per recipient. The day's fee is the change of earned between
 *   the two boundaries. The engine mints fees only when it accrues (every deposit, withdraw, …,
 *   and accrueFees()), so the minted counter alone moved only on days with an interaction and a
 *   quiet day's fee landed on the next active day; earned follows the yield every day. Both parts
 *   are exact chain reads, so the daily figures sum to the cumulative earned figure to the base
 *   unit, and the minted counters are kept as they are for what reached the recipients' wallets.
 *   A day's fee can be negative: a loss lowers the pending fee before it was minted.
 * - Yield: daily_yield_assets = ΔtotalAssets − deposits + withdrawals, the gross yield (fees
 *   included: fee shares are minted, the assets stay in the engine), in asset base units. It may
 *   be negative (an upstream loss) and carries the underlying vault's conversion rounding of the
 *   day's flows, which is part of what holders gained or lost.
 * - On the first day the engine's state before deployment is zero (an engine starts empty with
 *   zero counters), so the fee and yield figures of that day are defined and every later sum
 *   reconciles from deployment on.
 */
export function computeSnapshot(
  productId: string,
  date: string,
  reads: BoundaryReads,
  flows: DayFlows,
  prev: Snapshot | null,
): Snapshot {
  const engineTotalSupply = reads.engineSupply + reads.engineFeeShares;
  const gap = prev ? daysBetween(prev.date, date) : 0;
  if (prev && gap < 1) throw new RangeError(`previous row ${prev.date} is not before ${date}`);
  const apy = (pa: bigint, ps: bigint, ca: bigint, cs: bigint) =>
    prev ? apyFromSharePrices(sharePrice(pa, ps), sharePrice(ca, cs), gap) : null;
  return {
    productId,
    date,
    ...boundaryState(reads),
    depositsAssets: flows.deposits,
    withdrawalsAssets: flows.withdrawals,
    underlyingApy: apy(
      prev?.underlyingTotalAssets ?? 0n,
      prev?.underlyingTotalSupply ?? 0n,
      reads.underlyingAssets,
      reads.underlyingSupply,
    ),
    netApyForUser: netApy(prev, reads, engineTotalSupply, apy),
    dailyYieldAssets:
      reads.engineAssets - (prev?.engineTotalAssets ?? 0n) - flows.deposits + flows.withdrawals,
    dailyPartnerFee: partnerEarned(reads) - (prev ? earned(prev).partner : 0n),
    dailyServiceFee: serviceEarned(reads) - (prev ? earned(prev).service : 0n),
  };
}

/** The pool holder's net APY; from the totals when the previous row predates the pool figures. */
function netApy(
  prev: Snapshot | null,
  reads: BoundaryReads,
  engineTotalSupply: bigint,
  apy: (pa: bigint, ps: bigint, ca: bigint, cs: bigint) => string | null,
): string | null {
  if (prev && prev.enginePoolAssets != null && prev.enginePoolSupply != null) {
    return apy(
      prev.enginePoolAssets,
      prev.enginePoolSupply,
      reads.enginePoolAssets,
      reads.enginePoolSupply,
    );
  }
  return apy(
    prev?.engineTotalAssets ?? 0n,
    prev?.engineTotalSupply ?? 0n,
    reads.engineAssets,
    engineTotalSupply,
  );
}

/** The windows of the realised APYs, in days. */
export const REALISED_WINDOWS = [7, 30] as const;
export type RealisedWindow = (typeof REALISED_WINDOWS)[number];

/**
 * The APYs realised over the `days` days that end at `cur`'s boundary: the same method as the daily
 * figure, over a longer span. `start` is the row of the day `days` days before `cur` (D−N); the
 * share prices at the two boundaries give `(pps_D / pps_{D−N})^(365/N) − 1`, exact, 6 places
 * (apyFromSharePrices with `days` = N). The net figure is the pool holder's price (from the totals
 * when `start` predates the pool figures, as the daily figure does), the underlying figure the
 * underlying vault's totalAssets/totalSupply. Both null without a start row (the window has no data
 * yet) or when a price is undefined.
 */
export function realisedApys(
  start: Snapshot | null | undefined,
  cur: Snapshot,
  days: RealisedWindow,
): { net: string | null; underlying: string | null } {
  if (!start) return { net: null, underlying: null };
  if (daysBetween(start.date, cur.date) !== days) {
    throw new RangeError(`row ${start.date} is not ${days} days before ${cur.date}`);
  }
  const pool =
    start.enginePoolAssets != null &&
    start.enginePoolSupply != null &&
    cur.enginePoolAssets != null &&
    cur.enginePoolSupply != null;
  const net = pool
    ? apyFromSharePrices(
        sharePrice(start.enginePoolAssets!, start.enginePoolSupply!),
        sharePrice(cur.enginePoolAssets!, cur.enginePoolSupply!),
        days,
      )
    : apyFromSharePrices(
        sharePrice(start.engineTotalAssets, start.engineTotalSupply),
        sharePrice(cur.engineTotalAssets, cur.engineTotalSupply),
        days,
      );
  const underlying = apyFromSharePrices(
    sharePrice(start.underlyingTotalAssets, start.underlyingTotalSupply),
    sharePrice(cur.underlyingTotalAssets, cur.underlyingTotalSupply),
    days,
  );
  return { net, underlying };
}

/** Sets the row's 7- and 30-day realised APYs from the rows that start the windows (if any). */
export function withRealisedApys(
  row: Snapshot,
  startOf: (days: RealisedWindow) => Snapshot | null | undefined,
): Snapshot {
  const w7 = realisedApys(startOf(7), row, 7);
  const w30 = realisedApys(startOf(30), row, 30);
  row.netApy7d = w7.net;
  row.underlyingApy7d = w7.underlying;
  row.netApy30d = w30.net;
  row.underlyingApy30d = w30.underlying;
  return row;
}

const partnerEarned = (r: BoundaryReads) => r.partnerFeeAssetsTotal + r.partnerPendingAssets;
const serviceEarned = (r: BoundaryReads) => r.serviceFeeAssetsTotal + r.servicePendingAssets;

/** Fees earned up to a stored day's boundary: minted + pending, per recipient. */
export function earned(row: Snapshot): { partner: bigint; service: bigint } {
  if (row.partnerFeePending === null || row.serviceFeePending === null) {
    throw new RangeError(`row ${row.date} has no pending fees (written before migration 0021)`);
  }
  return {
    partner: row.partnerFeeAssetsTotal + row.partnerFeePending,
    service: row.serviceFeeAssetsTotal + row.serviceFeePending,
  };
}

/** The spec's operational thresholds, in percent, compared strictly ("moved by more than"). */
export const APY_CHANGE_THRESHOLD_PCT = 10;
export const TVL_ALERT_THRESHOLD_PCT = 20;

export interface DailyAlert {
  eventType: 'apy_change' | 'tvl_alert';
  /** Key order is the payload's JSON field order. */
  payload: Record<string, unknown>;
}

/**
 * The alerts of day `cur` against the previous day's row. Thresholds compare the exact values with
 * no rounding on the way (exactly 10 % / 20 % does not fire; anything above does, even when
 * change_pct displays "10.00"). The APYs compared are the stored 6-place APYs, the figures a partner
 * sees; their ratio is exact. No event without a previous value, or when it is 0 (DECISIONS).
 */
export function dailyAlerts(
  slug: string,
  assetDecimals: number,
  prev: Snapshot | null,
  cur: Snapshot,
): DailyAlert[] {
  const alerts: DailyAlert[] = [];
  if (!prev) return alerts;
  const pa = prev.netApyForUser;
  const ca = cur.netApyForUser;
  if (pa !== null && ca !== null && exceedsThreshold(pa, ca, APY_CHANGE_THRESHOLD_PCT)) {
    alerts.push({
      eventType: 'apy_change',
      payload: outboundPayload('apy_change', {
        slug,
        previous_apy: decimalToJsonNumber(pa),
        current_apy: decimalToJsonNumber(ca),
        change_pct: decimalToJsonNumber(changePct(pa, ca)!),
        date: cur.date,
      }),
    });
  }
  const pt = prev.engineTotalAssets;
  const ct = cur.engineTotalAssets;
  if (exceedsThreshold(pt, ct, TVL_ALERT_THRESHOLD_PCT)) {
    alerts.push({
      eventType: 'tvl_alert',
      payload: outboundPayload('tvl_alert', {
        slug,
        previous_tvl: formatUnits(pt, assetDecimals),
        current_tvl: formatUnits(ct, assetDecimals),
        change_pct: decimalToJsonNumber(changePct(pt, ct)!),
        date: cur.date,
      }),
    });
  }
  return alerts;
}
