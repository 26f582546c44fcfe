/**
 * Log indexer under failure: the RPC going down and coming back, a provider refusing wide
 * eth_getLogs ranges, and several workers on one database. The failures are real: a loopback
 * JSON-RPC proxy in front of anvil that stops listening (connection refused) or answers wide
 * eth_getLogs spans with the error hosted providers give.
 */
import type { Address } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '../../src/db/client.ts';
import { createCursorsRepo } from '../../src/db/cursors.ts';
import { createLeasesRepo } from '../../src/db/leases.ts';
import { LeaseLostError } from '../../src/worker/lease.ts';
import { engineWrite, type Fixture, setupFixture, USD, USERS } from '../chain/helpers.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import {
  chainSettings,
  engineProduct,
  makeIndexer,
  mine,
  type RpcProxy,
  startRpcProxy,
  storedEvents,
} from './helpers-indexer.ts';

let fx: Fixture;
let proxy: RpcProxy;
beforeAll(async () => {
  fx = await setupFixture();
  proxy = await startRpcProxy(fx.anvil.rpcUrl);
});
afterAll(async () => {
  await proxy?.close();
  await fx?.stop();
});

const [ALICE, BOB] = USERS as [Address, Address];

async function deposits(engine: Address, n: number) {
  const hashes: string[] = [];
  for (let i = 0; i < n; i++) {
    const user = i % 2 ? BOB : ALICE;
    const { receipt } = await engineWrite(fx, engine, user, {
      fn: 'deposit',
      args: [BigInt(i + 1) * USD, user],
    });
    hashes.push(receipt.transactionHash);
  }
  return hashes;
}

describe.each(storageEngines())('log indexer faults on %s', (engineName) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    proxy.setMaxLogSpan(null);
    await proxy.setDown(false);
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const open = async () => {
    const t = await freshDatabase(engineName);
    opened.push(t);
    return t;
  };

  it('RPC down then up: the round fails, the cursor stays, and the next round resumes without gap', async () => {
    const { db } = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const indexer = makeIndexer(fx, db, captureLogger().logger, { rpcUrls: [proxy.url] });
    const first = await deposits(engine, 2);
    await mine(fx, 2);
    await indexer.runOnce();
    const cursor = await createCursorsRepo(db).get(fx.anvil.chainId);

    await proxy.setDown(true);
    const during = await deposits(engine, 3); // the chain moves on while the provider is down
    await mine(fx, 2);
    await expect(indexer.runOnce()).rejects.toThrow();
    expect(await createCursorsRepo(db).get(fx.anvil.chainId)).toEqual(cursor);

    await proxy.setDown(false);
    await indexer.runOnce();
    const events = await storedEvents(db);
    expect(events.map((e) => e.txHash)).toEqual([...first, ...during]);
  });

  it('a job keeps running through an outage and catches up when the provider is back', async () => {
    const { db } = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const { logger, lines } = captureLogger();
    const indexer = makeIndexer(fx, db, logger, { rpcUrls: [proxy.url] });
    await proxy.setDown(true);
    const hashes = await deposits(engine, 3);
    await mine(fx, 2);
    const job = indexer.job(50);
    job.start();
    try {
      await waitFor(() => lines().some((l) => l.includes('job tick failed')));
      await proxy.setDown(false);
      await waitFor(async () => (await storedEvents(db)).length === 3);
    } finally {
      await job.stop();
    }
    expect((await storedEvents(db)).map((e) => e.txHash)).toEqual(hashes);
    // A stopped job hands the lease over at once.
    expect(await createLeasesRepo(db).holderOf(`indexer:${fx.anvil.chainId}`)).toBeUndefined();
  });

  it('a provider that rejects wide ranges makes the range shrink until accepted', async () => {
    const { db } = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const hashes = await deposits(engine, 6);
    await mine(fx, 2);
    proxy.setMaxLogSpan(3);
    proxy.spans.length = 0;
    const { logger, lines } = captureLogger();
    const indexer = makeIndexer(fx, db, logger, {
      rpcUrls: [proxy.url],
      chain: { ...chainSettings(fx, [proxy.url]), blockRangeLimit: 64 },
    });
    await indexer.runOnce();
    expect((await storedEvents(db)).map((e) => e.txHash)).toEqual(hashes);
    expect(proxy.spans.some((s) => s > 3)).toBe(true); // it did ask wide first
    expect(indexer.rangeLimit).toBeLessThanOrEqual(3n);
    expect(lines().some((l) => l.includes('range rejected: shrinking'))).toBe(true);
    // Once shrunk, the limit sticks: no rejected attempt in the next round.
    await deposits(engine, 2);
    await mine(fx, 2);
    proxy.spans.length = 0;
    await indexer.runOnce();
    expect(proxy.spans.every((s) => s <= 3)).toBe(true);
  });

  it('after a heavy range the range window asks for fewer blocks (toward the logs target)', async () => {
    const { db } = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const first = await deposits(engine, 8);
    await mine(fx, 2);
    const indexer = makeIndexer(fx, db, captureLogger().logger, {
      rpcUrls: [proxy.url],
      chain: { ...chainSettings(fx, [proxy.url]), blockRangeLimit: 64 },
      targetLogsPerRange: 2,
    });
    await indexer.runOnce(); // one range over every block so far: heavy for a target of 2 logs
    const second = await deposits(engine, 8);
    await mine(fx, 2);
    proxy.spans.length = 0;
    await indexer.runOnce();
    expect((await storedEvents(db, 'deposit.confirmed')).map((e) => e.txHash)).toEqual([
      ...first,
      ...second,
    ]);
    expect(proxy.spans.length).toBeGreaterThan(2);
    // Far below the provider limit of 64 blocks: each range holds a handful of logs.
    expect(
      proxy.spans.every((s) => s <= 8),
      JSON.stringify(proxy.spans),
    ).toBe(true);
  });

  it('two workers on one database never double-index; the second takes over when the first stops renewing', async () => {
    const t = await open();
    const { engine } = await engineProduct(fx, t.db, 'sync');
    // A second connection (pool) for PostgreSQL, as a second process would have.
    const db2 =
      engineName === 'postgres'
        ? await createDatabase({ engine: 'postgres', url: t.location, poolMax: 2 })
        : t.db;
    try {
      const ttl = 1_000;
      const a = makeIndexer(fx, t.db, captureLogger().logger, { holder: 'a', leaseTtlMs: ttl });
      const b = makeIndexer(fx, db2, captureLogger().logger, { holder: 'b', leaseTtlMs: ttl });
      const hashes = await deposits(engine, 4);
      await mine(fx, 2);
      const [ra, rb] = await Promise.all([a.runOnce(), b.runOnce()]);
      expect([ra.leased, rb.leased].sort()).toEqual([false, true]);
      const leader = ra.leased ? a : b;
      const follower = ra.leased ? b : a;
      for (let i = 0; i < 3; i++) {
        hashes.push(...(await deposits(engine, 2)));
        await mine(fx, 2);
        const [x, y] = await Promise.all([leader.runOnce(), follower.runOnce()]);
        expect(x.leased).toBe(true);
        expect(y.leased).toBe(false);
      }
      expect((await storedEvents(t.db)).map((e) => e.txHash)).toEqual(hashes);

      // The leader dies (stops renewing): after the ttl the follower takes over and continues.
      hashes.push(...(await deposits(engine, 2)));
      await mine(fx, 2);
      expect((await follower.runOnce()).leased).toBe(false);
      await new Promise((r) => setTimeout(r, ttl + 200));
      const took = await follower.runOnce();
      expect(took.leased).toBe(true);
      expect(took.events).toBe(2);
      // The old leader, back to life, no longer holds the chain.
      expect((await leader.runOnce()).leased).toBe(false);
      const events = await storedEvents(t.db);
      expect(events.map((e) => e.txHash)).toEqual(hashes);
      expect(new Set(events.map((e) => e.dedupeKey)).size).toBe(events.length);
    } finally {
      if (db2 !== t.db) await db2.close();
    }
  });

  it('a holder whose lease was taken over after its round began commits nothing', async () => {
    const { db } = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    await deposits(engine, 2);
    await mine(fx, 2);
    const lease = `indexer:${fx.anvil.chainId}`;
    // Every transaction of holder a starts after b took the lease (as if a had stalled past the
    // ttl between taking the lease and writing).
    const stalled: Database = {
      ...db,
      transaction: async (fn) => {
        await db.query(`UPDATE leases SET holder = 'b' WHERE name = $1`, [lease]);
        return db.transaction(fn);
      },
    };
    const a = makeIndexer(fx, stalled, captureLogger().logger, { holder: 'a' });
    await expect(a.runOnce()).rejects.toBeInstanceOf(LeaseLostError);
    expect(await createCursorsRepo(db).get(fx.anvil.chainId)).toBeUndefined();
    expect(await storedEvents(db)).toHaveLength(0);
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
