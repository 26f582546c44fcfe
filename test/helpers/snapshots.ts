/**
 * Writes daily snapshot rows directly, for API tests that need exact control of the data (every
 * boundary of a window). The service itself only writes snapshots from chain reads.
 */
import type { Queryable } from '../../src/db/client.ts';

export interface SnapshotRow {
  date: string;
  totalAssets: bigint;
  underlyingApy: string | null;
  netApy: string | null;
  dailyYield?: bigint | null;
  dailyPartnerFee?: bigint | null;
  dailyServiceFee?: bigint | null;
  /** Minted counters (default 0). */
  partnerFeeTotal?: bigint;
  serviceFeeTotal?: bigint;
  /** Pending fees at the boundary (default 0; null writes a row as before migration 0021). */
  partnerFeePending?: bigint | null;
  serviceFeePending?: bigint | null;
  /** Net APY realised over 7 days (migration 0043); default null, as on rows written before it. */
  netApy7d?: string | null;
}

export async function insertSnapshots(db: Queryable, productId: string, rows: SnapshotRow[]) {
  for (const [i, r] of rows.entries()) {
    await db.query(
      `INSERT INTO daily_snapshots (product_id, date, block_number, block_timestamp,
         engine_total_assets, engine_total_supply, underlying_total_assets, underlying_total_supply,
         service_fee_assets_total, partner_fee_assets_total, underlying_apy, net_apy_for_user,
         daily_yield_assets, daily_partner_fee, daily_service_fee, service_fee_pending,
         partner_fee_pending, net_apy_7d)
       VALUES ($1, $2, $3, $4, $5, $5, 0, 0, $12, $6, $7, $8, $9, $10, $11, $13, $14, $15)`,
      [
        productId,
        r.date,
        i + 1,
        new Date(`${r.date}T23:59:00Z`),
        r.totalAssets.toString(),
        (r.partnerFeeTotal ?? 0n).toString(),
        r.underlyingApy,
        r.netApy,
        r.dailyYield === undefined
          ? r.netApy === null
            ? null
            : '0'
          : (r.dailyYield?.toString() ?? null),
        r.dailyPartnerFee === undefined
          ? r.netApy === null
            ? null
            : '0'
          : (r.dailyPartnerFee?.toString() ?? null),
        r.dailyServiceFee === undefined
          ? r.netApy === null
            ? null
            : '0'
          : (r.dailyServiceFee?.toString() ?? null),
        (r.serviceFeeTotal ?? 0n).toString(),
        r.serviceFeePending === null ? null : (r.serviceFeePending ?? 0n).toString(),
        r.partnerFeePending === null ? null : (r.partnerFeePending ?? 0n).toString(),
        r.netApy7d ?? null,
      ],
    );
  }
}

/** Consecutive UTC dates ending at `last` (inclusive), oldest first. */
export function daysEnding(last: string, count: number): string[] {
  const end = Date.parse(`${last}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) =>
    new Date(end - (count - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}
