import { describe, expect, it } from 'vitest';
import { createPeriodicJob, createWorker } from '../src/worker/runner.ts';
import { captureLogger } from './helpers/logs.ts';

describe('worker runner', () => {
  it('runs ticks one at a time and stop() waits for the tick in flight', async () => {
    const { logger } = captureLogger();
    let active = 0;
    let maxActive = 0;
    let finished = 0;
    let release: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      release = resolve;
    });
    const job = createPeriodicJob({
      name: 'slow',
      intervalMs: 1,
      logger,
      tick: async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        release();
        await new Promise((r) => setTimeout(r, 50));
        active--;
        finished++;
      },
    });
    const worker = createWorker([job], logger);
    worker.start();
    await started;
    await worker.stop();
    expect(active).toBe(0); // the in-flight tick completed before stop resolved
    const after = finished;
    await new Promise((r) => setTimeout(r, 30));
    expect(finished).toBe(after); // and nothing ran after stop
    expect(maxActive).toBe(1);
  });

  it('a failing tick is logged and the job keeps running', async () => {
    const logs = captureLogger();
    let calls = 0;
    const job = createPeriodicJob({
      name: 'flaky',
      intervalMs: 5,
      logger: logs.logger,
      tick: async () => {
        calls++;
        if (calls === 1) throw new Error('transient');
      },
    });
    job.start();
    await new Promise((r) => setTimeout(r, 60));
    await job.stop();
    expect(calls).toBeGreaterThan(1);
    expect(
      logs.lines().some((l) => l.includes('job tick failed') && l.includes('"job":"flaky"')),
    ).toBe(true);
  });
});
