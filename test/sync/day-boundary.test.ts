/**
 * Day boundaries at exact timestamps: a block at 23:59:59 belongs to its day, a block at exactly
 * 00:00:00 to the next; a day without blocks carries the previous state over; a day is processed
 * only once a confirmed block is past its end. The search itself is checked against a linear scan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { USD } from '../../src/chain/local/deploy-local.ts';
import { createSnapshotsRepo } from '../../src/db/snapshots.ts';
import { createLogger } from '../../src/logger.ts';
import {
  addDays,
  type BlockTimes,
  createBlockTimes,
  dayStartSeconds,
  daysBetween,
  lastBlockBefore,
  utcDate,
} from '../../src/sync/day-boundary.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import { freshDatabase, storageEngines } from '../helpers/db.ts';
import {
  fromLocalEngine,
  type HandBuiltChain,
  provisionEngines,
  startHandBuiltChain,
} from './metrics-helpers.ts';

describe('UTC day arithmetic', () => {
  it('maps seconds to days with 00:00:00 starting the new day', () => {
    const midnight = Date.UTC(2024, 1, 29) / 1000; // leap day
    expect(utcDate(midnight - 1)).toBe('2024-02-28');
    expect(utcDate(midnight)).toBe('2024-02-29');
    expect(dayStartSeconds('2024-02-29')).toBe(midnight);
    expect(addDays('2024-02-28', 2)).toBe('2024-03-01');
    expect(addDays('2024-01-01', -1)).toBe('2023-12-31');
    expect(daysBetween('2023-12-31', '2024-03-01')).toBe(61);
    expect(() => dayStartSeconds('2024-13-01')).toThrow(RangeError);
  });
});

describe('lastBlockBefore', () => {
  const fake = (ts: number[]): BlockTimes => ({
    timestamp: async (b) => {
      const t = ts[Number(b)];
      if (t === undefined) throw new Error(`no block ${b}`);
      return t;
    },
  });

  it('equals a linear scan on random non-decreasing timestamps, for every fanout', async () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 60; round++) {
      const ts: number[] = [];
      let t = 1000;
      const len = 1 + rand(300);
      for (let i = 0; i < len; i++) {
        t += rand(4); // repeats allowed: some chains have equal timestamps
        ts.push(t);
      }
      const times = fake(ts);
      for (const fanout of [1, 2, 8, 31]) {
        const lo = rand(len);
        const hi = lo + rand(len - lo);
        const target = ts[lo]! - 2 + rand(ts[hi]! - ts[lo]! + 5);
        let expected: bigint | null = null;
        for (let b = lo; b <= hi; b++) if (ts[b]! < target) expected = BigInt(b);
        expect(await lastBlockBefore(times, target, BigInt(lo), BigInt(hi), fanout)).toBe(expected);
      }
    }
  });
});

// D = 2024-05-01. Genesis 20:00; contracts deployed at 20:01, so D is the engines' first day.
const GENESIS = Date.UTC(2024, 4, 1, 20, 0, 0) / 1000;
const D1 = Date.UTC(2024, 4, 2) / 1000; // 00:00:00 of D+1
const DAY = 86_400;
const SLUG = 'acme-live-usdc-core';

describe('day boundaries on a chain with chosen block times', () => {
  let hb: HandBuiltChain;
  const blocks: Record<string, bigint> = {};
  beforeAll(async () => {
    hb = await startHandBuiltChain(GENESIS);
    await hb.deposit(SLUG, 100n * USD);
    blocks.a = (await hb.builder.mine(D1 - 1)).number; // D 23:59:59
    await hb.deposit(SLUG, 50n * USD);
    blocks.b = (await hb.builder.mine(D1)).number; // D+1 00:00:00 exactly
    await hb.deposit(SLUG, 7n * USD);
    blocks.c = (await hb.builder.mine(D1 + 12 * 3600)).number; // D+1 12:00
    // D+2: no block at all.
    await hb.deposit(SLUG, 3n * USD);
    blocks.e = (await hb.builder.mine(D1 + 2 * DAY + 9 * 3600)).number; // D+3 09:00
    blocks.f1 = (await hb.builder.mine(D1 + 3 * DAY + 3600)).number; // D+4 01:00
    await hb.builder.mine(D1 + 3 * DAY + 3660);
    await hb.builder.mine(D1 + 3 * DAY + 3720);
  }, 120_000);
  afterAll(async () => {
    await hb?.anvil.stop();
  });

  it('finds the last block before midnight; a block at 00:00:00 is the next day', async () => {
    const times = createBlockTimes(createChainClient(hb.chain));
    const head = blocks.f1!;
    expect(await lastBlockBefore(times, D1, 0n, head)).toBe(blocks.a);
    expect(await lastBlockBefore(times, D1 + 1, 0n, head)).toBe(blocks.b);
    expect(await lastBlockBefore(times, D1 + DAY, 0n, head)).toBe(blocks.c);
    expect(await lastBlockBefore(times, D1 + 2 * DAY, blocks.c!, head)).toBe(blocks.c); // gap day
    expect(await lastBlockBefore(times, D1 + 3 * DAY, blocks.c!, head)).toBe(blocks.e);
    expect(await lastBlockBefore(times, GENESIS, 0n, head)).toBeNull();
  });

  describe.each(storageEngines())('processor on %s', (engine) => {
    it('assigns flows and state to the right days, carries a gap day, waits for confirmation', async () => {
      const test = await freshDatabase(engine);
      try {
        const [product] = await provisionEngines(test.db, hb.info, [
          fromLocalEngine(hb.engine(SLUG)),
        ]);
        const processor = (confirmationDepth: number) =>
          createMetricsProcessor({
            db: test.db,
            logger: createLogger('silent'),
            chain: { ...hb.chain, confirmationDepth },
            client: createChainClient(hb.chain),
            now: () => new Date((D1 + 3 * DAY + 12 * 3600) * 1000), // D+4 12:00
          });
        const repo = createSnapshotsRepo(test.db);

        // With depth 4 the confirmed head is C (D+1 12:00): only D is known to be over.
        expect((await processor(4).runOnce()).written).toBe(1);
        expect((await repo.latest(product!.id))?.date).toBe('2024-05-01');
        // With depth 2 it is the block at D+4 01:00: D+1 to D+3 are closed.
        expect((await processor(2).runOnce()).written).toBe(3);
        const rows = await repo.listRange(product!.id, '2024-05-01', '2024-05-10');
        expect(
          rows.map((r) => [
            r.date,
            r.blockNumber,
            r.depositsAssets / USD,
            r.engineTotalAssets / USD,
          ]),
        ).toEqual([
          ['2024-05-01', blocks.a, 100n, 100n],
          ['2024-05-02', blocks.c, 57n, 157n],
          ['2024-05-03', blocks.c, 0n, 157n], // gap day: the state at the last block before its end
          ['2024-05-04', blocks.e, 3n, 160n],
        ]);
        expect(rows[0]!.blockTimestamp.toISOString()).toBe('2024-05-01T23:59:59.000Z');
        // The sync vault's rate is 0: no yield, no fee, and an APY of exactly zero.
        for (const r of rows.slice(1)) {
          expect(r.dailyYieldAssets).toBe(0n);
          expect(r.dailyPartnerFee).toBe(0n);
          expect(r.netApyForUser).toBe('0.000000');
          expect(r.underlyingApy).toBe('0.000000');
        }
      } finally {
        await test.drop();
      }
    });
  });
});
