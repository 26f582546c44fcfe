/**
 * The log-range splitter shared by the indexer and the metrics' flow sweep. The provider is a
 * function here: a refusal by size is what real providers do (Alchemy, Infura) and anvil never
 * does; the indexer-faults suite drives the same classifier through a real HTTP proxy.
 */
import { describe, expect, it } from 'vitest';
import {
  blockRanges,
  halvedSpan,
  isRangeRejection,
  readLogRanges,
} from '../../src/chain/log-ranges.ts';

describe('log ranges', () => {
  it('cuts a span into ranges of at most maxBlocks', () => {
    expect(blockRanges(1n, 10n, 4n)).toEqual([
      [1n, 4n],
      [5n, 8n],
      [9n, 10n],
    ]);
    expect(blockRanges(5n, 5n, 100n)).toEqual([[5n, 5n]]);
    expect(blockRanges(6n, 5n, 100n)).toEqual([]);
    expect(halvedSpan(1n, 10n)).toBe(5n);
    expect(halvedSpan(7n, 7n)).toBeUndefined();
  });

  it('splits a refused range in half until the provider answers, keeping block order', async () => {
    const asked: string[] = [];
    // A provider that answers at most 3 blocks per call, as a result cap would.
    const read = async (from: bigint, to: bigint) => {
      asked.push(`${from}-${to}`);
      if (to - from + 1n > 3n) throw new Error('query returned more than 10000 results');
      const out: bigint[] = [];
      for (let b = from; b <= to; b++) out.push(b);
      return out;
    };
    const blocks = await readLogRanges(1n, 20n, 10n, read);
    expect(blocks).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
    expect(asked).toContain('1-10');
    expect(asked).toContain('1-5');
    expect(asked).toContain('1-2');
  });

  it('throws what is not a refusal, and a refused single block', async () => {
    const outage = Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    expect(isRangeRejection(outage)).toBe(false);
    await expect(
      readLogRanges(1n, 8n, 8n, async () => {
        throw outage;
      }),
    ).rejects.toBe(outage);
    const refused = new Error('block range is too wide');
    await expect(
      readLogRanges(1n, 2n, 8n, async () => {
        throw refused;
      }),
    ).rejects.toBe(refused);
  });
});
