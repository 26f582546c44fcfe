/**
 * The API's read side of daily snapshots (the writes are snapshots.ts): the few queries the endpoints need, shaped for them.
 * Amounts stay exact (numeric → string → bigint); APYs are the stored 6-place decimal strings.
 *
 * The first snapshot of a product has no previous day, so it has no APY; its daily figures count
 * from the engine's empty start (compute.ts). It is not in apy-history; fee-stats lists it with
 * `net_apy_for_user` null, so that the daily fees sum to the cumulative ones from deployment on.
 * It serves latest_metrics until the next day.
 * The same holds for a PROVISIONAL row (written at activation, at the deployment block, replaced
 * by the day's real row when the day closes): latest_metrics serves it (as_of_date = deployment
 * day, APYs null), apy-history, fee-stats and yield-calc's latest APY never do.
 *
 * Launch-day estimates (migration 0024): a row without its own APYs (the engine's first day, the
 * provisional row, an empty engine) may carry an estimate from the underlying vault's measured day
 * with the fees applied (src/sync/metrics/underlying-estimate.ts). latest_metrics and yield-calc
 * serve it, labelled `apy_basis: "underlying_estimate"`, where no APY of the engine's own exists;
 * apy-history and fee-stats never list it.
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
  /** The launch-day estimate of a row without its own APYs (else null). */
  estimatedUnderlyingApy: string | null;
  estimatedNetApy: string | null;
  /** Realised APYs over the 7 and 30 days ending at the row (migration 0043); null until known. */
  netApy7d: string | null;
  netApy30d: string | null;
  underlyingApy7d: string | null;
  underlyingApy30d: string | null;
}

/** Where an APY figure comes from: the engine's own day, or the underlying's day with the fees. */
export type ApyBasis = 'engine' | 'underlying_estimate';

/** The APYs a product is presented with, and their basis; undefined when there are none. */
export function presentedApys(
  s: SnapshotView,
): { underlyingApy: string; netApyForUser: string; basis: ApyBasis } | undefined {
  if (s.underlyingApy !== null && s.netApyForUser !== null) {
    return { underlyingApy: s.underlyingApy, netApyForUser: s.netApyForUser, basis: 'engine' };
  }
  if (s.estimatedUnderlyingApy !== null && s.estimatedNetApy !== null) {
    return {
      underlyingApy: s.estimatedUnderlyingApy,
      netApyForUser: s.estimatedNetApy,
      basis: 'underlying_estimate',
    };
  }
  return undefined;
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
  estimated_underlying_apy: string | null;
  estimated_net_apy: string | null;
  net_apy_7d: string | null;
  net_apy_30d: string | null;
  underlying_apy_7d: string | null;
  underlying_apy_30d: string | null;
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
  estimatedUnderlyingApy: r.estimated_underlying_apy,
  estimatedNetApy: r.estimated_net_apy,
  netApy7d: r.net_apy_7d,
  netApy30d: r.net_apy_30d,
  underlyingApy7d: r.underlying_apy_7d,
  underlyingApy30d: r.underlying_apy_30d,
});

const COLUMNS = `product_id, date, engine_total_assets, underlying_apy, net_apy_for_user,
  daily_yield_assets, daily_partner_fee, daily_service_fee, partner_fee_assets_total,
  service_fee_assets_total, partner_fee_pending, service_fee_pending, estimated_underlying_apy,
  estimated_net_apy, net_apy_7d, net_apy_30d, underlying_apy_7d, underlying_apy_30d`;

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

    /**
     * The net APY yield-calc prices with: that of the newest row that has one, the engine's own
     * (basis `engine`) or, on a row without it, the launch-day estimate (`underlying_estimate`).
     * Undefined when no row has either.
     */
    async latestNetApy(productId: string): Promise<{ value: string; basis: ApyBasis } | undefined> {
      const { rows } = await db.query<{
        net_apy_for_user: string | null;
        estimated_net_apy: string | null;
      }>(
        `SELECT CASE WHEN provisional THEN NULL ELSE net_apy_for_user END AS net_apy_for_user,
                estimated_net_apy
         FROM daily_snapshots
         WHERE product_id = $1
           AND ((net_apy_for_user IS NOT NULL AND NOT provisional) OR estimated_net_apy IS NOT NULL)
         ORDER BY date DESC LIMIT 1`,
        [productId],
      );
      const row = rows[0];
      if (!row) return undefined;
      return row.net_apy_for_user !== null
        ? { value: row.net_apy_for_user, basis: 'engine' }
        : { value: row.estimated_net_apy!, basis: 'underlying_estimate' };
    },

    /**
     * The net APY realised over the last `days` days (migration 0043) of the newest final row that
     * has one; undefined when none has (the product is younger than the window).
     */
    async latestRealisedNetApy(productId: string, days: 7 | 30): Promise<string | undefined> {
      const column = days === 7 ? 'net_apy_7d' : 'net_apy_30d';
      const { rows } = await db.query<{ apy: string }>(
        `SELECT ${column} AS apy FROM daily_snapshots
         WHERE product_id = $1 AND ${column} IS NOT NULL AND NOT provisional
         ORDER BY date DESC LIMIT 1`,
        [productId],
      );
      return rows[0]?.apy;
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

    /**
     * Snapshots with daily figures in [from, to], oldest first. The deployment day is one (its
     * figures count from the engine's empty start) though it has no APY: without it the daily
     * fees no longer summed to the cumulative ones (DECISIONS, "Fee figures": the first day's is
     * cumulative(D)).
     */
    async feeStats(productId: string, from: string, to: string): Promise<SnapshotView[]> {
      const { rows } = await db.query<Row>(
        `SELECT ${COLUMNS} FROM daily_snapshots
         WHERE product_id = $1 AND date BETWEEN $2 AND $3
           AND daily_yield_assets IS NOT NULL AND NOT provisional
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
