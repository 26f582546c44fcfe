/**
 * UTC days and their boundary blocks. DECISIONS: the snapshot of day D reads the chain at the last
 * block whose timestamp is before D+1 00:00 UTC. A block at exactly 00:00:00 of D+1 therefore belongs
 * to D+1, and a day without any block has the previous block as its boundary (its state carried over).
 */
import type { ChainClient } from '../chain/client.ts';

export const DAY_SECONDS = 86_400;

/** 'YYYY-MM-DD' of the UTC day containing `seconds`. */
export function utcDate(seconds: number): string {
  return new Date(Math.floor(seconds / DAY_SECONDS) * DAY_SECONDS * 1000)
    .toISOString()
    .slice(0, 10);
}

/** 00:00:00 UTC of `date`, in seconds. */
export function dayStartSeconds(date: string): number {
  const ms = Date.parse(`${date}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(ms)) {
    throw new RangeError(`not a date: ${JSON.stringify(date)}`);
  }
  return ms / 1000;
}

export function addDays(date: string, days: number): string {
  return utcDate(dayStartSeconds(date) + days * DAY_SECONDS);
}

/** Whole days from `from` to `to` (negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  return (dayStartSeconds(to) - dayStartSeconds(from)) / DAY_SECONDS;
}

/** Block timestamps (and hashes), fetched once each. Concurrent requests go out as one JSON-RPC batch. */
export interface BlockTimes {
  timestamp(block: bigint): Promise<number>;
  /** The block's hash as read for its timestamp (the daily rows keep their boundary's). */
  hash?(block: bigint): Promise<`0x${string}`>;
}

export function createBlockTimes(client: Pick<ChainClient, 'getBlock'>): BlockTimes {
  const cache = new Map<bigint, Promise<{ timestamp: number; hash: `0x${string}` }>>();
  const read = (block: bigint) => {
    let b = cache.get(block);
    if (!b) {
      b = client
        .getBlock({ blockNumber: block })
        .then((x) => ({ timestamp: Number(x.timestamp), hash: x.hash as `0x${string}` }));
      // A failed read must not poison the cache: the next call asks again.
      b.catch(() => cache.delete(block));
      cache.set(block, b);
    }
    return b;
  };
  return {
    timestamp: (block) => read(block).then((b) => b.timestamp),
    hash: (block) => read(block).then((b) => b.hash),
  };
}

/**
 * The last block in [lo, hi] whose timestamp is strictly before `target` (seconds), or null when
 * even `lo` is at or after it. Timestamps never decrease with the block number, so this is a search
 * over a sorted sequence; each round probes `fanout` evenly spaced blocks at once (one batched
 * round trip) and narrows the range by a factor fanout + 1, so a day on a chain of 12-second blocks
 * (7,200 blocks) takes about 4 round trips instead of 13 sequential ones. Callers pass the previous
 * day's boundary as `lo`, so a backfill only ever searches one day's worth of blocks.
 */
export async function lastBlockBefore(
  times: BlockTimes,
  target: number,
  lo: bigint,
  hi: bigint,
  fanout = 8,
): Promise<bigint | null> {
  if (hi < lo) throw new RangeError(`empty block range [${lo}, ${hi}]`);
  const [tLo, tHi] = await Promise.all([times.timestamp(lo), times.timestamp(hi)]);
  if (tLo >= target) return null;
  if (tHi < target) return hi;
  // Invariant: ts(lo) < target <= ts(hi).
  while (hi - lo > 1n) {
    const span = hi - lo;
    const k = BigInt(fanout);
    const probes: bigint[] = [];
    for (let i = 1n; i <= k; i++) {
      const p = lo + (span * i) / (k + 1n);
      if (p > lo && p < hi && p !== probes[probes.length - 1]) probes.push(p);
    }
    if (probes.length === 0) probes.push(lo + span / 2n);
    const ts = await Promise.all(probes.map((p) => times.timestamp(p)));
    let nextLo = lo;
    let nextHi = hi;
    for (const [i, p] of probes.entries()) {
      if (ts[i]! < target) nextLo = p;
      else {
        nextHi = p;
        break;
      }
    }
    lo = nextLo;
    hi = nextHi;
  }
  return lo;
}

/**
 * The boundary block of every day in `days` (one search per day, shared by every product that
 * lacks it). `lo` must be a block before the end of the oldest day. Days are searched oldest first,
 * each from the previous answer, and a first probe at the previous day's block count (doubled)
 * usually brackets the day, so each search covers about one day of blocks.
 */
export async function findDayBoundaries(
  times: BlockTimes,
  days: Iterable<string>,
  lo: bigint,
  safeHead: bigint,
): Promise<Map<string, bigint>> {
  const result = new Map<string, bigint>();
  let perDay = 0n;
  let prevDay: string | undefined;
  for (const day of [...new Set(days)].sort()) {
    const target = dayStartSeconds(day) + DAY_SECONDS;
    let hi = safeHead;
    if (perDay > 0n && prevDay) {
      const guess = lo + 2n * perDay * BigInt(daysBetween(prevDay, day)) + 1n;
      if (guess < hi) {
        if ((await times.timestamp(guess)) >= target) hi = guess;
        else lo = guess;
      }
    }
    const block = await lastBlockBefore(times, target, lo, hi);
    if (block === null) throw new Error(`no block before ${day} ends at or after block ${lo}`);
    if (prevDay !== undefined) perDay = block - (result.get(prevDay) ?? block);
    if (perDay < 1n) perDay = 1n;
    result.set(day, block);
    lo = block;
    prevDay = day;
  }
  return result;
}
