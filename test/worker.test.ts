import { HttpRequestError, TimeoutError } from 'viem';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isRetryable, NonRetryableError, RetryableError } from '../src/worker/errors.ts';
import { LeaseLostError } from '../src/worker/lease.ts';
import { backoffDelay, createPeriodicJob, createWorker } from '../src/worker/runner.ts';
import { captureLogger } from './helpers/logs.ts';

/** A promise and the function that resolves it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('worker runner', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs ticks one at a time and stop() waits for the tick in flight', async () => {
    vi.useFakeTimers();
    const { logger } = captureLogger();
    let active = 0;
    let maxActive = 0;
    let started = 0;
    let finished = 0;
    const entered = gate();
    const release = gate();
    const job = createPeriodicJob({
      name: 'slow',
      intervalMs: 1,
      logger,
      tick: async () => {
        started++;
        active++;
        maxActive = Math.max(maxActive, active);
        entered.open();
        await release.promise;
        active--;
        finished++;
      },
    });
    const worker = createWorker([job], logger);
    worker.start();
    await vi.advanceTimersByTimeAsync(0);
    await entered.promise;
    // Time passes while the tick is in flight: no second tick starts beside it.
    await vi.advanceTimersByTimeAsync(100);
    expect(started).toBe(1);
    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(stopped).toBe(false); // stop() waits for the tick in flight
    release.open();
    await stopping;
    expect(active).toBe(0);
    expect(finished).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(started).toBe(1); // and nothing ran after stop
    expect(maxActive).toBe(1);
  });

  it('a failing tick is logged and the job keeps running', async () => {
    vi.useFakeTimers();
    const logs = captureLogger();
    let calls = 0;
    const job = createPeriodicJob({
      name: 'flaky',
      intervalMs: 5,
      logger: logs.logger,
      // No jitter: the retry comes exactly 10 ms after the failure, and the next tick 5 ms later.
      // (With jitter the retry could come after 5 ms and the following tick inside the window.)
      backoff: { random: () => 1 },
      tick: async () => {
        calls++;
        if (calls === 1) throw new Error('transient');
      },
    });
    job.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    // The retry comes after the backoff (twice the interval after one failure), not before.
    await vi.advanceTimersByTimeAsync(9);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await job.stop();
    expect(
      logs.lines().some((l) => l.includes('job tick failed') && l.includes('"job":"flaky"')),
    ).toBe(true);
  });

  it('backs off exponentially on retryable failures, resets on success, waits the cap on a permanent one', async () => {
    vi.useFakeTimers();
    const logs = captureLogger();
    const outcomes: (Error | undefined)[] = [
      new RetryableError('rpc down'),
      new RetryableError('rpc down'),
      new RetryableError('rpc down'),
      undefined,
      new NonRetryableError('bad data'),
      undefined,
    ];
    const at: number[] = [];
    const start = Date.now();
    const job = createPeriodicJob({
      name: 'backoff',
      intervalMs: 100,
      logger: logs.logger,
      backoff: { maxMs: 5_000, random: () => 1 }, // no jitter: the exact schedule
      tick: async () => {
        at.push(Date.now() - start);
        const outcome = outcomes.shift();
        if (outcome) throw outcome;
      },
    });
    job.start();
    await vi.advanceTimersByTimeAsync(20_000);
    await job.stop();
    // Waits: 200, 400, 800 after failures 1–3; 100 after the success; the cap after the permanent one.
    expect(at.slice(0, 7)).toEqual([0, 200, 600, 1_400, 1_500, 6_500, 6_600]);
    const lines = logs.lines().filter((l) => l.includes('job tick failed'));
    expect(lines).toHaveLength(4);
    expect(lines[0]).toContain('"retryable":true');
    expect(lines[0]).toContain('"level":40'); // warn: it passes by itself
    expect(lines[3]).toContain('"retryable":false');
    expect(lines[3]).toContain('"level":50'); // error: someone must look
  });

  it('jitters each wait within [half, all] of the exponential delay, capped', () => {
    expect(backoffDelay(100, 1, { random: () => 0 })).toBe(100);
    expect(backoffDelay(100, 1, { random: () => 0.999_999 })).toBe(200);
    expect(backoffDelay(100, 3, { random: () => 1 })).toBe(800);
    expect(backoffDelay(100, 40, { maxMs: 5_000, random: () => 1 })).toBe(5_000);
    expect(backoffDelay(10_000, 1, { maxMs: 1_000, random: () => 1 })).toBe(10_000); // never below the interval
  });
});

describe('retryable errors', () => {
  it('classifies the service errors, RPC failures and database failures', () => {
    expect(isRetryable(new RetryableError('x'))).toBe(true);
    expect(isRetryable(new NonRetryableError('x'))).toBe(false);
    expect(isRetryable(new LeaseLostError('lease lost'))).toBe(true);
    expect(isRetryable(new TimeoutError({ body: {}, url: 'http://rpc' }))).toBe(true);
    expect(isRetryable(new HttpRequestError({ url: 'http://rpc', status: 502 }))).toBe(true);
    expect(isRetryable(new HttpRequestError({ url: 'http://rpc', status: 429 }))).toBe(true);
    expect(isRetryable(new HttpRequestError({ url: 'http://rpc', status: 401 }))).toBe(false);
    const sql = (code: string) => Object.assign(new Error('pg'), { code });
    expect(isRetryable(sql('57P01'))).toBe(true); // terminating connection (admin command)
    expect(isRetryable(sql('08006'))).toBe(true); // connection failure
    expect(isRetryable(sql('40001'))).toBe(true); // serialization failure
    expect(isRetryable(sql('23505'))).toBe(false); // unique violation: a bug, not an outage
    expect(isRetryable(sql('42601'))).toBe(false); // syntax error
    expect(isRetryable(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isRetryable(new Error('Connection terminated unexpectedly'))).toBe(true);
    // Wrapped: the cause decides.
    expect(isRetryable(new Error('round failed', { cause: sql('23505') }))).toBe(false);
  });
});
