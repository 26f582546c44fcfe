/**
 * The fee-stats row: its schema and how a snapshot becomes one. Shared by the partner API's
 * fee-stats endpoint and the portal's charts and CSV, so a partner sees the same figures in both.
 */
import { Type } from 'typebox';
import type { SnapshotView } from '../db/snapshot-reads.ts';
import { formatUnits } from '../money/index.ts';
import { DecimalString } from './schemas.ts';

export const FeeStatsRow = Type.Object(
  {
    date: Type.String({ format: 'date' }),
    engine_total_assets: DecimalString(
      'Engine total assets at the end of the day, whole asset units',
    ),
    daily_yield_assets: DecimalString(
      'Gross yield of the day (before fees), whole asset units; negative on a loss',
    ),
    daily_partner_fee_earned: DecimalString(
      'Partner fee earned that day: the change of cumulative_partner_fee_earned since the previous day, whole asset units. Negative when a loss removed a fee that was pending but not yet minted',
    ),
    daily_service_fee_earned: DecimalString(
      'Service fee earned that day, defined as daily_partner_fee_earned, whole asset units',
    ),
    cumulative_partner_fee_earned: DecimalString(
      'Partner fee earned since deployment at the end of the day: minted (cumulative_partner_fee_minted) plus the partner part of the fee pending in the engine at the day-boundary block, whole asset units',
    ),
    cumulative_service_fee_earned: DecimalString(
      'Service fee earned since deployment at the end of the day, defined as cumulative_partner_fee_earned, whole asset units',
    ),
    cumulative_partner_fee_minted: DecimalString(
      "The engine's cumulative partner fee counter at the day-boundary block: fees minted to the partner's recipient so far, valued at accrual, whole asset units",
    ),
    cumulative_service_fee_minted: DecimalString(
      "The engine's cumulative service fee counter at the day-boundary block, whole asset units",
    ),
    net_apy_for_user: Type.Union(
      [
        DecimalString(
          'APY after fees of a holder in the pool (on an asynchronous product, open redeem requests are not part of it), decimal fraction, 6 places',
        ),
        Type.Null(),
      ],
      {
        description:
          "APY after fees of a holder in the pool (on an asynchronous product, open redeem requests are not part of it), decimal fraction, 6 places. Null on the deployment day (no previous day's price to measure from; its fees and yield count from the engine's empty start) and on a day the engine was empty",
      },
    ),
  },
  { title: 'FeeStatsRow', additionalProperties: false },
);

/** fee-stats rows as the API serves them (the portal's charts and CSV use the same function). */
export function feeStatsRows(rows: readonly SnapshotView[], assetDecimals: number) {
  const units = (v: bigint | null) => formatUnits(v ?? 0n, assetDecimals);
  return rows.map((r) => ({
    date: r.date,
    engine_total_assets: units(r.engineTotalAssets),
    daily_yield_assets: units(r.dailyYieldAssets),
    daily_partner_fee_earned: units(r.dailyPartnerFee),
    daily_service_fee_earned: units(r.dailyServiceFee),
    cumulative_partner_fee_earned: units(r.cumulativePartnerFeeEarned),
    cumulative_service_fee_earned: units(r.cumulativeServiceFeeEarned),
    cumulative_partner_fee_minted: units(r.cumulativePartnerFeeMinted),
    cumulative_service_fee_minted: units(r.cumulativeServiceFeeMinted),
    net_apy_for_user: r.netApyForUser,
  }));
}
