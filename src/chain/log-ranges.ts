/**
 * Block ranges for eth_getLogs, and what to do when a provider refuses one. Providers cap block
 * spans, result counts or response time, and say so only in the message (Ponder's
 * getLogsRetryHelper idea): a refused range is split in half until it answers. The indexer (which
 * also remembers the smaller span for its next ranges) and the daily metrics' flow sweep share
 * these, so both read logs the same way on the same providers.
 */
/** An inclusive block range [from, to]. */
export type BlockRange = [from: bigint, to: bigint];

/** The provider refused the range itself (too many results, span too wide, timed out). */
export class RangeRejectedError extends Error {
  override name = 'RangeRejectedError';
}

const RANGE_HINTS = [
  /too many (results|logs|blocks)/i,
  /more than \d+ (results|logs)/i,
  /(block )?range (is )?too (large|wide|big)/i,
  /exceed(s|ed)? (the )?(max|maximum|limit)/i,
  /block range/i,
  /limit exceeded/i,
  /response (size|is too)/i,
  /timed? ?out|timeout/i,
  /query returned more than/i,
  // The HTTP client's own cap on a response body (viem: 10 MiB): a smaller range answers smaller.
  /body exceeded the size limit/i,
];

/** Every message along the error's cause chain (viem wraps the provider's error). */
export function errorMessages(err: unknown): string[] {
  const out: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 8; depth++) {
    if (typeof e !== 'object') break;
    const o = e as {
      message?: unknown;
      details?: unknown;
      shortMessage?: unknown;
      cause?: unknown;
    };
    for (const m of [o.message, o.details, o.shortMessage]) if (typeof m === 'string') out.push(m);
    e = o.cause;
  }
  return out;
}

export function isRangeRejection(err: unknown): boolean {
  if (err instanceof RangeRejectedError) return true;
  const e = err as { code?: unknown; name?: unknown } | undefined;
  // -32005: the EIP-1474 "limit exceeded" code several providers use for log queries.
  if (
    e?.code === -32005 ||
    e?.name === 'TimeoutError' ||
    e?.name === 'LimitExceededRpcError' ||
    e?.name === 'ResponseBodyTooLargeError'
  ) {
    return true;
  }
  const all = errorMessages(err).join('\n');
  // A connection failure is an outage, not a range problem: shrinking would not help.
  if (/fetch failed|ECONNREFUSED|ECONNRESET|socket hang up/i.test(all) && !/timeout/i.test(all)) {
    return false;
  }
  return RANGE_HINTS.some((re) => re.test(all));
}

/** [from, to] in consecutive ranges of at most maxBlocks blocks. */
export function blockRanges(from: bigint, to: bigint, maxBlocks: bigint): BlockRange[] {
  const step = maxBlocks > 0n ? maxBlocks : 1n;
  const out: BlockRange[] = [];
  for (let start = from; start <= to; start += step) {
    out.push([start, start + step - 1n < to ? start + step - 1n : to]);
  }
  return out;
}

/** The span to ask for after [from, to] was refused: half of it, or undefined for one block. */
export function halvedSpan(from: bigint, to: bigint): bigint | undefined {
  const span = to - from + 1n;
  return span > 1n ? span / 2n : undefined;
}

/**
 * Everything `read` returns over [from, to], asked in ranges of at most maxBlocks (all at once:
 * the transport batches them). A range the provider refuses is split in half and each half asked
 * again, down to one block; any other failure, or a refused single block, is thrown.
 */
export async function readLogRanges<T>(
  from: bigint,
  to: bigint,
  maxBlocks: bigint,
  read: (from: bigint, to: bigint) => Promise<T[]>,
): Promise<T[]> {
  const readSplitting = async ([a, b]: BlockRange): Promise<T[]> => {
    try {
      return await read(a, b);
    } catch (err) {
      const half = isRangeRejection(err) ? halvedSpan(a, b) : undefined;
      if (half === undefined) throw err;
      const [left, right] = await Promise.all([
        readSplitting([a, a + half - 1n]),
        readSplitting([a + half, b]),
      ]);
      return left.concat(right);
    }
  };
  const parts = await Promise.all(blockRanges(from, to, maxBlocks).map(readSplitting));
  return parts.flat();
}
