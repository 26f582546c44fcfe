/**
 * Launch-day pricing (#14). A product launched today has no APY of its own: the APY of day D needs
 * the engine's share price at the boundaries of D−1 and D, and the engine did not exist at D−1's.
 * Until it has a full day of its own, the service serves an ESTIMATE made from the underlying vault,
 * which the engine invests everything in and whose history on chain predates the engine:
 *
 * - underlying APY: `(pps_D / pps_{D−1})^365 − 1` of the UNDERLYING vault, its share price read at
 *   the two day-boundary blocks (DECISIONS, "Numbers": the same formula and boundary rule as a
 *   measured day);
 * - net APY: the engine charges `service_fee_bps + partner_fee_bps` on yield only (above its
 *   high-water mark; a new engine's mark is its starting price), so a holder keeps
 *   `1 + g·(1 − fee)` of a day's growth `1 + g` when g > 0, and all of a loss. The same exact
 *   6-place APY arithmetic is applied to that ratio.
 *
 * Which day is measured: the provisional row written at activation uses the last finished day
 * before the deployment (boundaries of D−2 and D−1); the engine's first real row (day D, written
 * when D closes) uses day D itself (boundaries of D−1 and D). Either way: two consecutive
 * boundaries of the underlying. No estimate (null) when the underlying did not exist yet at the
 * earlier boundary or had no shares: absent, never invented.
 */
import type { Address } from 'viem';
import type { ChainClient } from '../../chain/client.ts';
import { readVaultTotals, type VaultTotals } from '../../chain/read-vault-totals.ts';
import { isStateUnavailable } from '../../chain/state-unavailable.ts';
import { apyFromSharePrices, sharePrice } from '../../money/index.ts';
import {
  addDays,
  type BlockTimes,
  createBlockTimes,
  DAY_SECONDS,
  dayStartSeconds,
  lastBlockBefore,
} from '../day-boundary.ts';

export interface ApyEstimate {
  underlyingApy: string;
  netApyForUser: string;
}

const BPS = 10_000n;

/**
 * The estimate from the underlying's totals at two consecutive day boundaries and the engine's
 * total fee in basis points. Pure and exact (bigint); null when either share price is undefined.
 */
export function estimateFromUnderlying(
  prev: VaultTotals,
  cur: VaultTotals,
  totalFeeBps: number,
): ApyEstimate | null {
  if (!Number.isInteger(totalFeeBps) || totalFeeBps < 0 || totalFeeBps > 10_000) {
    throw new RangeError(`fee must be 0..10000 bps, got ${totalFeeBps}`);
  }
  const underlyingApy = apyFromSharePrices(
    sharePrice(prev.totalAssets, prev.totalSupply),
    sharePrice(cur.totalAssets, cur.totalSupply),
  );
  if (underlyingApy === null) return null;
  // The day's ratio pps_D / pps_{D−1} = p / q; a holder's ratio after the fee, over a common
  // denominator 10,000·q: a gain keeps (10,000 − fee) of its part, a loss is borne whole.
  const p = cur.totalAssets * prev.totalSupply;
  const q = cur.totalSupply * prev.totalAssets;
  const kept = p > q ? BPS * q + (p - q) * (BPS - BigInt(totalFeeBps)) : BPS * p;
  const netApyForUser = apyFromSharePrices(
    { assets: BPS * q, supply: 1n },
    { assets: kept, supply: 1n },
  );
  if (netApyForUser === null) return null;
  return { underlyingApy, netApyForUser };
}

/** The boundary block of `day` (last block before the next day's 00:00 UTC) at or below `hi`. */
async function boundaryBlock(times: BlockTimes, day: string, hi: bigint): Promise<bigint | null> {
  return lastBlockBefore(times, dayStartSeconds(day) + DAY_SECONDS, 0n, hi);
}

/**
 * Reads the underlying vault at the boundaries of `day − 1` and `day` (both at or below `hi`) and
 * estimates. `curTotals`, when the caller has already read the vault at `day`'s boundary, saves
 * that read. Null when the vault has no code at the earlier boundary (it did not exist yet), or
 * either price is undefined. Any other read failure is thrown: the caller retries later rather
 * than store a missing estimate for good.
 */
export async function readUnderlyingEstimate(
  client: ChainClient,
  args: {
    vault: Address;
    /** The day measured. */
    day: string;
    totalFeeBps: number;
    /** The highest block the search may use (the deployment block, or `day`'s boundary). */
    hi: bigint;
    times?: BlockTimes;
    curTotals?: VaultTotals;
  },
): Promise<ApyEstimate | null> {
  const times = args.times ?? createBlockTimes(client);
  const [prevBlock, curBlock] = await Promise.all([
    boundaryBlock(times, addDays(args.day, -1), args.hi),
    args.curTotals ? Promise.resolve(null) : boundaryBlock(times, args.day, args.hi),
  ]);
  if (prevBlock === null) return null; // the chain itself starts later
  if (!args.curTotals && curBlock === null) return null;
  try {
    const code = await client.getCode({ address: args.vault, blockNumber: prevBlock });
    if (!code || code === '0x') return null; // the underlying was deployed after that boundary
    const [prev, cur] = await Promise.all([
      readVaultTotals(client, { vault: args.vault, blockNumber: prevBlock }),
      args.curTotals ?? readVaultTotals(client, { vault: args.vault, blockNumber: curBlock! }),
    ]);
    return estimateFromUnderlying(prev, cur, args.totalFeeBps);
  } catch (err) {
    // A node that keeps no state that far back (a pruned full node; the local chain reloaded
    // without its historical states) cannot give the estimate: none, as when the underlying is
    // younger than the day. The estimate is a label for a launch day, never a figure of record.
    if (isStateUnavailable(err)) return null;
    throw err;
  }
}
