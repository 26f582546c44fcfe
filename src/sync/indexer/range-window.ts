/**
 * How many blocks the indexer asks for next, besides the provider's range limit: a window that aims
 * at a number of logs per range. It starts small and doubles while ranges are light, and is cut back
 * toward the target after a heavy range. Ranges of a few thousand logs keep the pipeline flowing (the
 * next range is fetched while the current one is written, which only overlaps when neither step is
 * one huge block of work) and keep memory bounded, on dense and sparse chains alike.
 */
export const DEFAULT_TARGET_LOGS_PER_RANGE = 2_000;
export const INITIAL_WINDOW_BLOCKS = 16n;

export interface RangeWindow {
  /** Blocks the next range may span (before the provider's limit). */
  readonly blocks: bigint;
  /** Records a fetched range: its span in blocks and how many logs it held. */
  record(span: bigint, logs: number): void;
}

export function createRangeWindow(options: {
  maxBlocks: bigint;
  targetLogs?: number;
  initialBlocks?: bigint;
}): RangeWindow {
  const target = BigInt(Math.max(1, options.targetLogs ?? DEFAULT_TARGET_LOGS_PER_RANGE));
  const max = options.maxBlocks < 1n ? 1n : options.maxBlocks;
  const initial = options.initialBlocks ?? INITIAL_WINDOW_BLOCKS;
  let blocks = initial < max ? initial : max;
  return {
    get blocks() {
      return blocks;
    },
    record(span, logs) {
      const n = BigInt(logs);
      if (n > target) {
        const cut = (span * target) / n;
        blocks = cut < 1n ? 1n : cut;
      } else {
        const grown = (span > blocks ? span : blocks) * 2n;
        blocks = grown < max ? grown : max;
      }
    },
  };
}
