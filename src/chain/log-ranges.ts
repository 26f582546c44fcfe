/**
 * Block ranges for eth_getLogs, and what to do when a provider refuses one. Providers cap block
 * spans, result counts or response time, and say so only in the message (Ponder's
 * getLogsRetryHelper idea): a refused range is split in half until it answers. The indexer (which
 * also remembers the smaller span for its next ranges) and the daily metrics' flow sweep share
 * these, so both read logs the same way on the same providers.
 */
import { BaseError } from '../errors.ts';
import { errorMessages } from './error-messages.ts';
import { classifyProviderError } from './provider-errors.ts';

/** An inclusive block range [from, to]. */
export type BlockRange = [from: bigint, to: bigint];

/**
 * The provider refused the range itself (too many results, span too wide, timed out). `maxBlocks`
 * is the span the provider named as its cap or suggested, when it did.
 */
export class RangeRejectedError extends BaseError<'range_rejected'> {
  override name = 'RangeRejectedError';
  readonly maxBlocks: bigint | undefined;
  constructor(message: string, options: { cause?: unknown; maxBlocks?: bigint } = {}) {
    super('range_rejected', message, { cause: options.cause });
    this.maxBlocks = options.maxBlocks;
  }
}

export { errorMessages };

/**
 * Whether asking for a smaller range can help: the provider refused the span or the size of the
 * answer (src/chain/provider-errors.ts reads which), or took too long to answer. A rate limit or an
 * outage is not a range problem: shrinking would only cost more requests.
 */
export function isRangeRejection(err: unknown): boolean {
  if (err instanceof RangeRejectedError) return true;
  const refusal = classifyProviderError(err);
  if (refusal) return refusal.kind === 'range' || refusal.kind === 'results';
  const e = err as { name?: unknown } | undefined;
  if (e?.name === 'TimeoutError' || e?.name === 'ResponseBodyTooLargeError') return true;
  const all = errorMessages(err).join('\n');
  if (/fetch failed|ECONNREFUSED|ECONNRESET|socket hang up/i.test(all) && !/timeout/i.test(all)) {
    return false;
  }
  return /timed? ?out|timeout/i.test(all);
}

/** The block cap a refusal named or suggested, if any. */
export function refusedCap(err: unknown): bigint | undefined {
  if (err instanceof RangeRejectedError) return err.maxBlocks;
  const refusal = classifyProviderError(err);
  return refusal && (refusal.kind === 'range' || refusal.kind === 'results')
    ? refusal.maxBlocks
    : undefined;
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
 * The span to ask for after [from, to] was refused with `err`: the cap the provider named when it
 * is below the refused span, otherwise half; undefined for a single block.
 */
export function nextSpan(err: unknown, from: bigint, to: bigint): bigint | undefined {
  const span = to - from + 1n;
  if (span <= 1n) return undefined;
  const cap = refusedCap(err);
  return cap !== undefined && cap > 0n && cap < span ? cap : span / 2n;
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
      const half = isRangeRejection(err) ? nextSpan(err, a, b) : undefined;
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
