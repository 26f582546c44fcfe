/**
 * The API's read side of daily snapshots (the writes are snapshots.ts): the few queries the endpoints need, shaped for them.
 * Amounts stay exact (numeric → string → bigint); APYs are the stored 6-place decimal strings.
 *
 * The first snapshot of a product has no previous day, so it has no APY and no daily figures; it
 * appears in neither apy-history nor fee-stats, and serves latest_metrics until the next day.
 * The same holds for a PROVISIONAL row (written at activation, at the deployment block, replaced
 * by the day's real row when the day closes): latest_metrics serves it (as_of_date = deployment
 * day, APYs null), apy-history, fee-stats and yield-calc's latest APY never do.
 *
 * Fee figures (DECISIONS, "Fee figures"): earned = minted (the engine's cumulative counters) +
 * pending (its pendingFees() view), both read at the boundary block. A row written before
 * migration 0021 has no pending part and fees of the old definition: fee-stats skips it until the
 * metrics processor has replaced it (its next run).
 */
import type { Queryable } from './client.ts';

export interface SnapshotView {
  date: string;
  engineTotalAssets: bigint;
  underlyingApy: string | null;
  netApyForUser: string | null;
  dailyYieldAssets: bigint | null;
  dailyPartnerFee: bigint | null;
  dailyServiceFee: bigint | null;
  /** Earned up to the day's boundary: minted + pending. Pending is 0 on a legacy row. */
  cumulativePartnerFeeEarned: bigint;
  cumulativeServiceFeeEarned: bigint;
  /** The engine's minted counters at the boundary: what reached the recipients' wallets. */
  cumulativePartnerFeeMinted: bigint;
  cumulativeServiceFeeMinted: bigint;
}

interface Row {
  product_id: string;
  date: string;
  engine_total_assets: string;
  underlying_apy: string | null;
  net_apy_for_user: string | null;
  daily_yield_assets: string | null;
  daily_partner_fee: string | null;
  daily_service_fee: string | null;
  partner_fee_assets_total: string;
  service_fee_assets_total: string;
  partner_fee_pending: string | null;
  service_fee_pending: string | null;
}

const big = (v: string | null) => (v === null ? null : BigInt(v));
const toView = (r: Row): SnapshotView => ({
  date: r.date,
  engineTotalAssets: BigInt(r.engine_total_assets),
  underlyingApy: r.underlying_apy,
  netApyForUser: r.net_apy_for_user,
  dailyYieldAssets: big(r.daily_yield_assets),
  dailyPartnerFee: big(r.daily_partner_fee),
  dailyServiceFee: big(r.daily_service_fee),
  cumulativePartnerFeeEarned:
    BigInt(r.partner_fee_assets_total) + BigInt(r.partner_fee_pending ?? '0'),
  cumulativeServiceFeeEarned:
    BigInt(r.service_fee_assets_total) + BigInt(r.service_fee_pending ?? '0'),
  cumulativePartnerFeeMinted: BigInt(r.partner_fee_assets_total),
  cumulativeServiceFeeMinted: BigInt(r.service_fee_assets_total),
});

const COLUMNS = `product_id, date, engine_total_assets, underlying_apy, net_apy_for_user,
  daily_yield_assets, daily_partner_fee, daily_service_fee, partner_fee_assets_total,
  service_fee_assets_total, partner_fee_pending, service_fee_pending`;

export function createSnapshotReads(db: Queryable) {
  return {
    /** The latest snapshot of each product (one query for a whole products list). */
    async latestFor(productIds: readonly string[]): Promise<Map<string, SnapshotView>> {
      if (productIds.length === 0) return new Map();
      const { rows } = await db.query<Row>(
        `SELECT DISTINCT ON (product_id) ${COLUMNS} FROM daily_snapshots
         WHERE product_id = ANY($1::text[]) ORDER BY product_id, date DESC`,
        [productIds],
      );
      return new Map(rows.map((r) => [r.product_id, toView(r)]));
    },

    /**
     * The date of the newest final (not provisional) snapshot: the latest finished day, where
     * trailing windows end (date-range.ts).
     */
    async latestFinalDate(productId: string): Promise<string | undefined> {
      const { rows } = await db.query<{ date: string }>(
        `SELECT date FROM daily_snapshots WHERE product_id = $1 AND NOT provisional
         ORDER BY date DESC LIMIT 1`,
        [productId],
      );
      return rows[0]?.date;
    },

    /** The latest measured net APY (the first day has none). */
    async latestNetApy(productId: string): Promise<string | undefined> {
      const { rows } = await db.query<{ net_apy_for_user: string }>(
        `SELECT net_apy_for_user FROM daily_snapshots
         WHERE product_id = $1 AND net_apy_for_user IS NOT NULL AND NOT provisional
         ORDER BY date DESC LIMIT 1`,
        [productId],
      );
      return rows[0]?.net_apy_for_user;
    },

    /** Snapshots with an APY in [from, to], newest first. */
    async apyHistory(productId: string, from: string, to: string): Promise<SnapshotView[]> {
      const { rows } = await db.query<Row>(
        `SELECT ${COLUMNS} FROM daily_snapshots
         WHERE product_id = $1 AND date BETWEEN $2 AND $3
           AND underlying_apy IS NOT NULL AND net_apy_for_user IS NOT NULL AND NOT provisional
         ORDER BY date DESC`,
        [productId, from, to],
      );
      return rows.map(toView);
    },

    /** Snapshots with daily figures in [from, to], oldest first. */
    async feeStats(productId: string, from: string, to: string): Promise<SnapshotView[]> {
      const { rows } = await db.query<Row>(
        `SELECT ${COLUMNS} FROM daily_snapshots
         WHERE product_id = $1 AND date BETWEEN $2 AND $3
           AND daily_yield_assets IS NOT NULL AND net_apy_for_user IS NOT NULL AND NOT provisional
           AND partner_fee_pending IS NOT NULL AND service_fee_pending IS NOT NULL
         ORDER BY date ASC`,
        [productId, from, to],
      );
      return rows.map(toView);
    },
  };
}

/**
 * The read model's version (data_versions, bumped by triggers on every visible change to products,
 * snapshots and keys): the API's read cache serves nothing older.
 */
export async function readModelVersion(db: Queryable): Promise<string | undefined> {
  const { rows } = await db.query<{ version: string }>(
    "SELECT version FROM data_versions WHERE name = 'read_model'",
  );
  return rows[0]?.version;
}

export type SnapshotReads = ReturnType<typeof createSnapshotReads>;
