/** The local chain's scripted events leave every demo product in its status, for any history length. */
import { describe, expect, it } from 'vitest';
import { schedule } from '../../src/chain/local/simulate.ts';

describe('local chain schedule', () => {
  it('lifts the pause and the upstream halt within the history, for 2 to 730 days', () => {
    for (let days = 2; days <= 730; days++) {
      const s = schedule(days);
      const inHistory = (d: number) => d >= 1 && d <= days - 1;
      expect(inHistory(s.pauseActive) && inHistory(s.resumeActive), `days ${days}`).toBe(true);
      expect(s.resumeActive >= s.pauseActive, `days ${days}`).toBe(true);
      // A halt is lifted the next day, so it needs one.
      if (s.upstreamHalt !== -1) expect(s.upstreamHalt + 1 <= days - 1, `days ${days}`).toBe(true);
      for (const d of [s.loss, s.deprecate, s.pauseForGood]) expect(inHistory(d)).toBe(true);
    }
    expect(schedule(2).upstreamHalt).toBe(-1);
    expect(schedule(3).upstreamHalt).toBe(1);
    expect(schedule(200)).toMatchObject({ upstreamHalt: 110, pauseActive: 80, resumeActive: 82 });
  });
});
