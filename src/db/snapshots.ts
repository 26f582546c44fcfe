/**
 * Repository of daily_snapshots: one row per product per UTC day, written once by the daily metrics
 * processor and read by the API (latest_metrics, apy-history, fee-stats). Amounts are bigint base
 * units, APYs the exact 6-place strings stored in numeric(30,6), dates 'YYYY-MM-DD'.
 *
 * A PROVISIONAL row (migration 0008) is the one exception to "written once": the lifecycle writes
 * it for the deployment day when a product becomes active, from the chain state at the deployment
 * block, so latest_metrics is never null for an active product. It has no APY and no daily
 * figures, never covers its day for the processor (coverage, latestFinal), and the processor's
 * real row for that day replaces it (insertMany). A real row is never replaced.
 *
 * A LEGACY row (written before migration 0021: no pending fees, daily fees of the old minted-only
 * definition) is treated like a provisional one by the processor: it covers no day, is no previous
 * day, and the recomputed real row replaces it. The API keeps serving its APYs meanwhile.
 */
import type { Queryable } from './client.ts';

export interface Snapshot {
  productId: string;
  /** UTC day, 'YYYY-MM-DD'. */
  date: string;
  /** The day-boundary block: the last block whose timestamp is before the next day's 00:00 UTC. */
  blockNumber: bigint;
  blockTimestamp: Date;
  /**
   * The boundary block's hash when the row was computed (migration 0032): a row whose block the
   * chain no longer has is computed again (src/sync/metrics/reorg-check.ts). Null on older rows.
   */
  blockHash?: `0x${string}` | null;
  engineTotalAssets: bigint;
  /** Engine ERC-20 supply plus the fee shares pending at that block. */
  engineTotalSupply: bigint;
  /**
   * The active pool (migration 0040): activeAssets and activeSupply + pending fee shares, the price
   * a pool holder gets (on an asynchronous product the totals also count open requests). Equal to
   * the totals on a synchronous product; null on rows written before.
   */
  enginePoolAssets?: bigint | null;
  enginePoolSupply?: bigint | null;
  underlyingTotalAssets: bigint;
  underlyingTotalSupply: bigint;
  /** Cumulative fee counters of the engine at the block (assets valued at accrual). */
  serviceFeeAssetsTotal: bigint;
  partnerFeeAssetsTotal: bigint;
  /**
   * The fee the engine's next accrual would charge at the block, split as it splits it (its
   * `pendingFees()` view). Earned = minted (the totals above) + pending. Null only on a legacy row.
   */
  serviceFeePending: bigint | null;
  partnerFeePending: bigint | null;
  /** Flows of the day: sums of the engine's Deposit and Withdraw `assets`. */
  depositsAssets: bigint;
  withdrawalsAssets: bigint;
  /** 6-place decimal fraction; null when there is no previous day or a price is undefined. */
  underlyingApy: string | null;
  netApyForUser: string | null;
  dailyYieldAssets: bigint | null;
  /** Change of the fee earned (minted + pending) since the previous day's boundary. */
  dailyPartnerFee: bigint | null;
  dailyServiceFee: bigint | null;
  /** Written at activation, replaced by the day's real row (absent: false). */
  provisional?: boolean;
  /**
   * Launch-day estimate (migration 0024), only on a row without its own APYs: the underlying
   * vault's measured APY of one day, and that APY with the engine's fees applied
   * (src/sync/metrics/underlying-estimate.ts). Absent: null.
   */
  estimatedUnderlyingApy?: string | null;
  estimatedNetApy?: string | null;
  /**
   * Realised APYs (migration 0043): from the share prices at the boundaries of D−7 / D−30 and D,
   * annualised like the daily figure (src/sync/metrics/compute.ts, realisedApys). Null until the
   * window's first row exists. Absent: null.
   */
  netApy7d?: string | null;
  netApy30d?: string | null;
  underlyingApy7d?: string | null;
  underlyingApy30d?: string | null;
}

/** True for a row the processor built on (neither provisional nor written before 0021). */
export function isFinal(s: Snapshot): boolean {
  return !s.provisional && s.partnerFeePending !== null && s.serviceFeePending !== null;
}

interface SnapshotRow {
  product_id: string;
  date: string;
  block_number: string;
  block_timestamp: Date;
  engine_total_assets: string;
  engine_total_supply: string;
  underlying_total_assets: string;
  underlying_total_supply: string;
  service_fee_assets_total: string;
  partner_fee_assets_total: string;
  service_fee_pending: string | null;
  partner_fee_pending: string | null;
  deposits_assets: string;
  withdrawals_assets: string;
  underlying_apy: string | null;
  net_apy_for_user: string | null;
  daily_yield_assets: string | null;
  daily_partner_fee: string | null;
  daily_service_fee: string | null;
  provisional: boolean;
  estimated_underlying_apy: string | null;
  estimated_net_apy: string | null;
  block_hash: `0x${string}` | null;
  engine_pool_assets: string | null;
  engine_pool_supply: string | null;
  net_apy_7d: string | null;
  net_apy_30d: string | null;
  underlying_apy_7d: string | null;
  underlying_apy_30d: string | null;
}

const COLUMNS = [
  'product_id',
  'date',
  'block_number',
  'block_timestamp',
  'engine_total_assets',
  'engine_total_supply',
  'underlying_total_assets',
  'underlying_total_supply',
  'service_fee_assets_total',
  'partner_fee_assets_total',
  'service_fee_pending',
  'partner_fee_pending',
  'deposits_assets',
  'withdrawals_assets',
  'underlying_apy',
  'net_apy_for_user',
  'daily_yield_assets',
  'daily_partner_fee',
  'daily_service_fee',
  'provisional',
  'estimated_underlying_apy',
  'estimated_net_apy',
  'block_hash',
  'engine_pool_assets',
  'engine_pool_supply',
  'net_apy_7d',
  'net_apy_30d',
  'underlying_apy_7d',
  'underlying_apy_30d',
] as const;

const SELECT = `SELECT ${COLUMNS.join(', ')} FROM daily_snapshots`;
/** A real row the processor relies on: not provisional, and written since migration 0021. */
const FINAL = 'NOT provisional AND partner_fee_pending IS NOT NULL';
/** Rows per INSERT statement: 29 parameters each keeps a statement well under PostgreSQL's 65,535. */
const INSERT_CHUNK = 500;

const big = (v: string) => BigInt(v);
const bigOrNull = (v: string | null) => (v === null ? null : BigInt(v));

function toSnapshot(r: SnapshotRow): Snapshot {
  return {
    productId: r.product_id,
    date: r.date,
    blockNumber: big(r.block_number),
    blockTimestamp: r.block_timestamp,
    engineTotalAssets: big(r.engine_total_assets),
    engineTotalSupply: big(r.engine_total_supply),
    underlyingTotalAssets: big(r.underlying_total_assets),
    underlyingTotalSupply: big(r.underlying_total_supply),
    serviceFeeAssetsTotal: big(r.service_fee_assets_total),
    partnerFeeAssetsTotal: big(r.partner_fee_assets_total),
    serviceFeePending: bigOrNull(r.service_fee_pending),
    partnerFeePending: bigOrNull(r.partner_fee_pending),
    depositsAssets: big(r.deposits_assets),
    withdrawalsAssets: big(r.withdrawals_assets),
    underlyingApy: r.underlying_apy,
    netApyForUser: r.net_apy_for_user,
    dailyYieldAssets: bigOrNull(r.daily_yield_assets),
    dailyPartnerFee: bigOrNull(r.daily_partner_fee),
    dailyServiceFee: bigOrNull(r.daily_service_fee),
    provisional: r.provisional,
    estimatedUnderlyingApy: r.estimated_underlying_apy,
    estimatedNetApy: r.estimated_net_apy,
    blockHash: r.block_hash,
    enginePoolAssets: bigOrNull(r.engine_pool_assets),
    enginePoolSupply: bigOrNull(r.engine_pool_supply),
    netApy7d: r.net_apy_7d,
    netApy30d: r.net_apy_30d,
    underlyingApy7d: r.underlying_apy_7d,
    underlyingApy30d: r.underlying_apy_30d,
  };
}

function params(s: Snapshot): unknown[] {
  const str = (v: bigint | null) => (v === null ? null : v.toString());
  return [
    s.productId,
    s.date,
    s.blockNumber.toString(),
    s.blockTimestamp,
    s.engineTotalAssets.toString(),
    s.engineTotalSupply.toString(),
    s.underlyingTotalAssets.toString(),
    s.underlyingTotalSupply.toString(),
    s.serviceFeeAssetsTotal.toString(),
    s.partnerFeeAssetsTotal.toString(),
    str(s.serviceFeePending),
    str(s.partnerFeePending),
    s.depositsAssets.toString(),
    s.withdrawalsAssets.toString(),
    s.underlyingApy,
    s.netApyForUser,
    str(s.dailyYieldAssets),
    str(s.dailyPartnerFee),
    str(s.dailyServiceFee),
    s.provisional ?? false,
    s.estimatedUnderlyingApy ?? null,
    s.estimatedNetApy ?? null,
    s.blockHash ?? null,
    str(s.enginePoolAssets ?? null),
    str(s.enginePoolSupply ?? null),
    s.netApy7d ?? null,
    s.netApy30d ?? null,
    s.underlyingApy7d ?? null,
    s.underlyingApy30d ?? null,
  ];
}

export function createSnapshotsRepo(db: Queryable) {
  return {
    /**
     * Inserts the rows whose (product, day) has none yet; an existing real day is never changed (a
     * rerun of a day is a no-op). A real row replaces a PROVISIONAL or LEGACY row of its day; a
     * provisional row never replaces anything. Returns the keys `productId|date` of the rows actually written
     * (inserted or replacing a provisional one), so the caller emits a day's events only with the
     * write that created the day's real row.
     */
    async insertMany(rows: readonly Snapshot[]): Promise<Set<string>> {
      const inserted = new Set<string>();
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK);
        const values: unknown[] = [];
        const tuples = chunk.map((row, r) => {
          values.push(...params(row));
          const base = r * COLUMNS.length;
          return `(${COLUMNS.map((_, c) => `$${base + c + 1}`).join(',')})`;
        });
        const { rows: done } = await db.query<{ product_id: string; date: string }>(
          `INSERT INTO daily_snapshots (${COLUMNS.join(', ')}) VALUES ${tuples.join(',')}
           ON CONFLICT (product_id, date) DO UPDATE SET
             ${COLUMNS.filter((c) => c !== 'product_id' && c !== 'date')
               .map((c) => `${c} = EXCLUDED.${c}`)
               .join(', ')},
             created_at = now()
           WHERE (daily_snapshots.provisional OR daily_snapshots.partner_fee_pending IS NULL)
             AND NOT EXCLUDED.provisional
           RETURNING product_id, date`,
          values,
        );
        for (const d of done) inserted.add(`${d.product_id}|${d.date}`);
      }
      return inserted;
    },

    /** Inserts one row unless its day exists; true when it was inserted. */
    async insert(row: Snapshot): Promise<boolean> {
      return (await this.insertMany([row])).size === 1;
    },

    /**
     * Writes `row` as the PROVISIONAL row of its day, unless the day has a row already (real or
     * provisional); true when it was inserted.
     */
    async insertProvisional(row: Snapshot): Promise<boolean> {
      return (await this.insertMany([{ ...row, provisional: true }])).size === 1;
    },

    /** The newest final (not provisional, not legacy) row: the processor's previous day. */
    async latestFinal(productId: string): Promise<Snapshot | undefined> {
      const { rows } = await db.query<SnapshotRow>(
        `${SELECT} WHERE product_id = $1 AND ${FINAL} ORDER BY date DESC LIMIT 1`,
        [productId],
      );
      return rows[0] && toSnapshot(rows[0]);
    },

    /** The newest row of the product, provisional or not (latest_metrics). */
    async latest(productId: string): Promise<Snapshot | undefined> {
      const { rows } = await db.query<SnapshotRow>(
        `${SELECT} WHERE product_id = $1 ORDER BY date DESC LIMIT 1`,
        [productId],
      );
      return rows[0] && toSnapshot(rows[0]);
    },

    /** Rows with fromDate <= date <= toDate (inclusive, 'YYYY-MM-DD'), oldest first (fee-stats). */
    async listRange(productId: string, fromDate: string, toDate: string): Promise<Snapshot[]> {
      const { rows } = await db.query<SnapshotRow>(
        `${SELECT} WHERE product_id = $1 AND date >= $2::date AND date <= $3::date ORDER BY date`,
        [productId, fromDate, toDate],
      );
      return rows.map(toSnapshot);
    },

    /** The n newest rows, newest first (apy-history). */
    async listLatest(productId: string, n: number): Promise<Snapshot[]> {
      const { rows } = await db.query<SnapshotRow>(
        `${SELECT} WHERE product_id = $1 ORDER BY date DESC LIMIT $2`,
        [productId, n],
      );
      return rows.map(toSnapshot);
    },

    /**
     * Number of final rows of the product and its newest final day (the processor's resume
     * point): a provisional or legacy row does not cover its day.
     */
    async coverage(productId: string): Promise<{ count: number; latestDate: string | null }> {
      const { rows } = await db.query<{ count: string; latest: string | null }>(
        `SELECT count(*) AS count, max(date) AS latest FROM daily_snapshots
         WHERE product_id = $1 AND ${FINAL}`,
        [productId],
      );
      return { count: Number(rows[0]?.count ?? 0), latestDate: rows[0]?.latest ?? null };
    },

    /**
     * The boundary blocks (number and hash as computed) of the chain's final rows dated `since` or
     * later: what the reorg check compares with the chain.
     */
    async boundariesSince(
      chainId: number,
      since: string,
    ): Promise<{ blockNumber: bigint; blockHash: `0x${string}` }[]> {
      const { rows } = await db.query<{ block_number: string; block_hash: `0x${string}` }>(
        `SELECT DISTINCT s.block_number, s.block_hash FROM daily_snapshots s
           JOIN products p ON p.id = s.product_id
          WHERE p.chain_id = $1 AND s.date >= $2::date AND s.block_hash IS NOT NULL
            AND NOT s.provisional AND s.partner_fee_pending IS NOT NULL
          ORDER BY s.block_number`,
        [chainId, since],
      );
      return rows.map((r) => ({ blockNumber: BigInt(r.block_number), blockHash: r.block_hash }));
    },

    /**
     * Removes the chain's final rows whose boundary block is `fromBlock` or later (their day holds
     * blocks the chain no longer has, or follows such a day); returns the (product, date) removed.
     */
    async removeFromBlock(
      chainId: number,
      fromBlock: bigint,
    ): Promise<{ productId: string; date: string }[]> {
      const { rows } = await db.query<{ product_id: string; date: string }>(
        `DELETE FROM daily_snapshots s USING products p
          WHERE p.id = s.product_id AND p.chain_id = $1 AND s.block_number >= $2
            AND NOT s.provisional
          RETURNING s.product_id, s.date`,
        [chainId, fromBlock.toString()],
      );
      return rows.map((r) => ({ productId: r.product_id, date: r.date }));
    },

    /** Every day that has a row, oldest first. */
    async listDates(productId: string): Promise<string[]> {
      const { rows } = await db.query<{ date: string }>(
        `SELECT date FROM daily_snapshots WHERE product_id = $1 ORDER BY date`,
        [productId],
      );
      return rows.map((r) => r.date);
    },
  };
}

export type SnapshotsRepo = ReturnType<typeof createSnapshotsRepo>;
