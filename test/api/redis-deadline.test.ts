/**
 * A process that is busy for longer than Redis's command deadline keeps the answers Redis sent in
 * time. Seen in CI on a loaded machine: with ioredis's commandTimeout (a plain timer, expired before
 * the event loop reads the socket), the commands of a busy API process failed, its rate-limit hits
 * went to its own memory, and two processes let a shared budget through twice (60 failed attempts
 * counted where 30 are allowed). Real Redis; the busy process is this one, held by a synchronous
 * loop while the answers arrive.
 */
import { Redis as PlainRedis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createFallbackCounter, createMemoryCounter } from '../../src/http/fixed-window.ts';
import { afterIo, DeadlineError, within } from '../../src/io-deadline.ts';
import { createRedis, type Redis } from '../../src/redis.ts';
import { testRedisUrl, uniqueRedisPrefix } from '../helpers/redis.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';

/** Holds the event loop, as a long synchronous task or a starved CPU does. */
function holdTheLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

describe.runIf(testRedisUrl())('Redis commands while the process is busy', () => {
  const clients: Redis[] = [];
  afterAll(() => {
    for (const c of clients) c.disconnect();
  });

  it('counts every hit in Redis when the process was held past the deadline with hits in flight', async () => {
    const prefix = uniqueRedisPrefix();
    const redis = createRedis(testRedisUrl()!, { keyPrefix: prefix });
    clients.push(redis);
    await redis.ping();
    const lost: unknown[] = [];
    redis.on('error', (err) => lost.push(err));
    redis.on('close', () => lost.push('close'));

    const local = createMemoryCounter();
    const counter = createFallbackCounter(redis, 'fw:', local);
    const hits = Array.from({ length: 60 }, () => counter.hit('busy', 60_000));
    holdTheLoop(1_500);
    const counts = (await Promise.all(hits)).map((h) => h.count);

    // Every hit was Redis's: one count from 1 to 60, and none in this process's memory.
    expect(counts.sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(await redis.get('fw:busy')).toBe('60');
    expect(local.hitNow!('busy', 60_000).count).toBe(1);
    // And the connection was kept: a held process is not a silent Redis.
    expect(lost).toEqual([]);
    expect(redis.status).toBe('ready');
  });

  it('the watchdog keeps a connection whose PING was answered while the process was held', async () => {
    const redis = createRedis(testRedisUrl()!, { keyPrefix: uniqueRedisPrefix() });
    clients.push(redis);
    await redis.ping();
    const closed: unknown[] = [];
    redis.on('close', () => closed.push('close'));
    // Held for 1.2 s at a time with one turn of the loop between: the watchdog's PING (every
    // second) goes out in that turn, and its answer arrives while the loop is held again.
    for (let i = 0; i < 4; i++) {
      holdTheLoop(1_200);
      await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toEqual([]);
    expect(await redis.ping()).toBe('PONG');
  }, 20_000);

  it('a hit that timed out is not sent again on the next connection (it was counted in memory)', async () => {
    const target = new URL(testRedisUrl()!);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(target.port || 6379) });
    const prefix = uniqueRedisPrefix();
    const redis = createRedis(`redis://127.0.0.1:${proxy.port}`, { keyPrefix: prefix });
    const direct = createRedis(testRedisUrl()!, { keyPrefix: prefix });
    clients.push(redis, direct);
    redis.on('error', () => {}); // the outage is the point
    try {
      await redis.ping();
      const counter = createFallbackCounter(redis, 'fw:', createMemoryCounter());
      await proxy.setMode('silent');
      const reconnected = new Promise((r) => redis.once('ready', r));
      // Swallowed by the silent connection: answered from memory after the deadline.
      expect((await counter.hit('once', 60_000)).count).toBe(1);
      await proxy.setMode('up');
      await reconnected;
      await new Promise((r) => setTimeout(r, 100));
      // ioredis re-sends a closed connection's unanswered commands by default: the hit would then
      // count twice, once here and once in Redis.
      expect(await direct.get('fw:once')).toBeNull();
      expect((await counter.hit('once', 60_000)).count).toBe(1);
    } finally {
      await proxy.close();
    }
  }, 20_000);

  it('within keeps an answer that arrived while the loop was held', async () => {
    const redis = createRedis(testRedisUrl()!, { keyPrefix: uniqueRedisPrefix() });
    clients.push(redis);
    await redis.ping();
    const result = within(100, redis.ping());
    holdTheLoop(300);
    expect(await result).toBe('PONG');
  });

  it('(the cause, reproduced) ioredis commandTimeout fails the same commands', async () => {
    const plain = new PlainRedis(testRedisUrl()!, { commandTimeout: 1_000, lazyConnect: true });
    await plain.connect();
    try {
      const pings = Array.from({ length: 10 }, () =>
        plain.ping().then(
          () => 'answered',
          (err: Error) => err.message,
        ),
      );
      holdTheLoop(1_500);
      expect(new Set(await Promise.all(pings))).toEqual(new Set(['Command timed out']));
    } finally {
      plain.disconnect();
    }
  });
});

describe('within', () => {
  it('fails what is not settled by its deadline', async () => {
    const never = new Promise<string>(() => {});
    const started = Date.now();
    await expect(within(100, never)).rejects.toBeInstanceOf(DeadlineError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(99);
  });

  it('afterIo can be cancelled', async () => {
    let fired = false;
    const cancel = afterIo(20, () => {
      fired = true;
    });
    cancel();
    await new Promise((r) => setTimeout(r, 60));
    expect(fired).toBe(false);
  });
});
