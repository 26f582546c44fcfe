/** The indexer's range window: starts small, doubles while ranges are light, cut toward the target. */
import { describe, expect, it } from 'vitest';
import { createRangeWindow, INITIAL_WINDOW_BLOCKS } from '../../src/sync/indexer/range-window.ts';

describe('range window', () => {
  it('starts small and doubles while ranges hold fewer logs than the target, up to the limit', () => {
    const w = createRangeWindow({ maxBlocks: 100n, targetLogs: 1_000 });
    expect(w.blocks).toBe(INITIAL_WINDOW_BLOCKS);
    w.record(16n, 10);
    expect(w.blocks).toBe(32n);
    w.record(32n, 10);
    w.record(64n, 10);
    expect(w.blocks).toBe(100n);
  });

  it('after a heavy range, asks for the span that would have held the target', () => {
    const w = createRangeWindow({ maxBlocks: 10_000n, targetLogs: 2_000 });
    w.record(40n, 10_000);
    expect(w.blocks).toBe(8n);
    w.record(8n, 64_000); // denser still: never below one block
    expect(w.blocks).toBe(1n);
  });

  it('never exceeds the provider limit, even from the start', () => {
    expect(createRangeWindow({ maxBlocks: 3n }).blocks).toBe(3n);
  });
});
