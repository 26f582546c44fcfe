/**
 * apy_change (> 10 %) and tvl_alert (> 20 %): exactly at the threshold nothing fires, strictly more
 * fires, in both directions. The decision function with exact values, then on chain: TVL moves of
 * exactly +20 % and a hair more crafted with deposits into a zero-rate vault, an APY jump from a
 * rate change, the payloads, and the alert window of a backfill.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { USD } from '../../src/chain/local/deploy-local.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import type { Snapshot } from '../../src/db/snapshots.ts';
import { createLogger } from '../../src/logger.ts';
import { dailyAlerts } from '../../src/sync/metrics/compute.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import { freshDatabase, storageEngines } from '../helpers/db.ts';
import {
  fromLocalEngine,
  type HandBuiltChain,
  provisionEngines,
  startHandBuiltChain,
} from './metrics-helpers.ts';

function row(date: string, netApy: string | null, tvl: bigint): Snapshot {
  return {
    productId: 'prd_x',
    date,
    blockNumber: 1n,
    blockTimestamp: new Date(0),
    engineTotalAssets: tvl,
    engineTotalSupply: tvl,
    underlyingTotalAssets: 1n,
    underlyingTotalSupply: 1n,
    serviceFeeAssetsTotal: 0n,
    partnerFeeAssetsTotal: 0n,
    serviceFeePending: 0n,
    partnerFeePending: 0n,
    depositsAssets: 0n,
    withdrawalsAssets: 0n,
    underlyingApy: netApy,
    netApyForUser: netApy,
    dailyYieldAssets: 0n,
    dailyPartnerFee: 0n,
    dailyServiceFee: 0n,
  };
}

const types = (prev: Snapshot | null, cur: Snapshot) =>
  dailyAlerts('s', 6, prev, cur).map((a) => a.eventType);

describe('dailyAlerts thresholds (exact values)', () => {
  const tvl = 1_000_000_000n;
  it('apy_change: exactly ±10 % does not fire, a millionth more does', () => {
    const prev = row('2024-01-01', '0.050000', tvl);
    expect(types(prev, row('2024-01-02', '0.055000', tvl))).toEqual([]);
    expect(types(prev, row('2024-01-02', '0.045000', tvl))).toEqual([]);
    expect(types(prev, row('2024-01-02', '0.055001', tvl))).toEqual(['apy_change']);
    expect(types(prev, row('2024-01-02', '0.044999', tvl))).toEqual(['apy_change']);
    // Negative APYs: the change is relative to |previous|.
    const neg = row('2024-01-01', '-0.020000', tvl);
    expect(types(neg, row('2024-01-02', '-0.022000', tvl))).toEqual([]);
    expect(types(neg, row('2024-01-02', '-0.022001', tvl))).toEqual(['apy_change']);
  });

  it('apy_change: no event without a previous APY, or when it is 0', () => {
    expect(types(null, row('2024-01-02', '0.9', tvl))).toEqual([]);
    expect(types(row('2024-01-01', null, tvl), row('2024-01-02', '0.9', tvl))).toEqual([]);
    expect(types(row('2024-01-01', '0.000000', tvl), row('2024-01-02', '0.9', tvl))).toEqual([]);
    expect(types(row('2024-01-01', '0.05', tvl), row('2024-01-02', null, tvl))).toEqual([]);
  });

  it('tvl_alert: exactly ±20 % does not fire, one base unit more does', () => {
    const prev = row('2024-01-01', '0.05', tvl);
    expect(types(prev, row('2024-01-02', '0.05', 1_200_000_000n))).toEqual([]);
    expect(types(prev, row('2024-01-02', '0.05', 800_000_000n))).toEqual([]);
    expect(types(prev, row('2024-01-02', '0.05', 1_200_000_001n))).toEqual(['tvl_alert']);
    expect(types(prev, row('2024-01-02', '0.05', 799_999_999n))).toEqual(['tvl_alert']);
    expect(types(row('2024-01-01', '0.05', 0n), row('2024-01-02', '0.05', 5n))).toEqual([]);
  });

  it('builds the payloads with JSON numbers and whole-unit TVL strings', () => {
    const alerts = dailyAlerts(
      'acme-x',
      6,
      row('2024-01-01', '0.050000', 1_000_000_000n),
      row('2024-01-02', '0.061234', 1_500_000_500n),
    );
    expect(JSON.stringify(alerts.map((a) => a.payload))).toBe(
      JSON.stringify([
        {
          slug: 'acme-x',
          previous_apy: 0.05,
          current_apy: 0.061234,
          change_pct: 22.47,
          date: '2024-01-02',
        },
        {
          slug: 'acme-x',
          previous_tvl: '1000',
          current_tvl: '1500.0005',
          change_pct: 50,
          date: '2024-01-02',
        },
      ]),
    );
  });
});

// D0 = 2024-06-03; genesis 08:00, engines deployed a minute later.
const D0 = Date.UTC(2024, 5, 3) / 1000;
const DAY = 86_400;
const SYNC = 'acme-live-usdc-core';
const ASYNC = 'acme-live-usdc-flex';

describe('alerts on chain', () => {
  let hb: HandBuiltChain;
  beforeAll(async () => {
    hb = await startHandBuiltChain(D0 + 8 * 3600);
    const at = (day: number, hour: number) => D0 + day * DAY + hour * 3600;
    // Day 0: opening positions. The sync vault pays nothing (TVL moves only by deposits).
    await hb.deposit(SYNC, 1000n * USD);
    await hb.deposit(ASYNC, 1000n * USD);
    await hb.builder.mine(at(0, 10));
    await hb.deposit(SYNC, 200n * USD); // 1000 → 1200: exactly +20 %
    await hb.builder.mine(at(1, 10));
    await hb.deposit(SYNC, 240n * USD + 1n); // 1200 → 1440.000001: just over +20 %
    await hb.setRate(hb.contracts.asyncVault.address, 1300); // from 4.2 % to 13 %: the APY jumps
    await hb.builder.mine(at(2, 10));
    await hb.withdraw(SYNC, 300n * USD); // 1440.000001 → 1140.000001: −20.83 %
    await hb.builder.mine(at(3, 10));
    for (const m of [1, 2, 3]) await hb.builder.mine(at(4, 1) + m);
  }, 120_000);
  afterAll(async () => {
    await hb?.anvil.stop();
  });

  describe.each(storageEngines())('on %s', (engine) => {
    const run = async (alertWindowDays?: number) => {
      const test = await freshDatabase(engine);
      const products = await provisionEngines(test.db, hb.info, [
        fromLocalEngine(hb.engine(SYNC)),
        fromLocalEngine(hb.engine(ASYNC)),
      ]);
      const processor = createMetricsProcessor({
        db: test.db,
        logger: createLogger('silent'),
        chain: hb.chain,
        client: createChainClient(hb.chain),
        now: () => new Date((D0 + 5 * DAY + 3600) * 1000), // today = day 5
        ...(alertWindowDays === undefined ? {} : { alertWindowDays }),
      });
      const { written } = await processor.runOnce();
      const events = await createEventsRepo(test.db).list();
      await test.drop();
      return { written, products, events };
    };

    it('fires tvl_alert only strictly above 20 % and apy_change on the jump, with exact payloads', async () => {
      const { written, events } = await run(1000);
      expect(written).toBe(8); // days 0..3 for two products
      const keys = events.map((e) => e.dedupeKey);
      expect(keys.filter((k) => k.startsWith('tvl_alert'))).toEqual([
        'tvl_alert:acme-live-usdc-core:2024-06-05',
        'tvl_alert:acme-live-usdc-core:2024-06-06',
      ]);
      expect(keys).not.toContain('tvl_alert:acme-live-usdc-core:2024-06-04');
      expect(keys.some((k) => k.startsWith('apy_change:acme-live-usdc-core'))).toBe(false);
      // The rate changes in the day-2 block, which is that day's boundary (no later block that
      // day), so the higher rate first shows in day 3's APY.
      expect(keys.filter((k) => k.startsWith('apy_change'))).toEqual([
        'apy_change:acme-live-usdc-flex:2024-06-06',
      ]);

      const up = events.find((e) => e.dedupeKey === 'tvl_alert:acme-live-usdc-core:2024-06-05')!;
      expect(up.payload).toBe(
        JSON.stringify({
          slug: SYNC,
          previous_tvl: '1200',
          current_tvl: '1440.000001',
          change_pct: 20,
          date: '2024-06-05',
        }),
      );
      expect(up.occurredAt.toISOString()).toBe('2024-06-05T10:00:00.000Z');
      const down = JSON.parse(
        events.find((e) => e.dedupeKey === 'tvl_alert:acme-live-usdc-core:2024-06-06')!.payload,
      );
      expect(down).toMatchObject({ previous_tvl: '1440.000001', current_tvl: '1140.000001' });
      expect(down.change_pct).toBe(-20.83);

      const apy = JSON.parse(
        events.find((e) => e.dedupeKey === 'apy_change:acme-live-usdc-flex:2024-06-06')!.payload,
      );
      expect(Object.keys(apy)).toEqual([
        'slug',
        'previous_apy',
        'current_apy',
        'change_pct',
        'date',
      ]);
      expect(typeof apy.previous_apy).toBe('number');
      expect(apy.current_apy).toBeGreaterThan(apy.previous_apy);
      expect(apy.change_pct).toBeGreaterThan(10);
      expect(apy.date).toBe('2024-06-06');
    });

    it('stores only the last two days of alerts by default (no flood on a first backfill)', async () => {
      const { events } = await run();
      // Today is day 5: days 3 and 4 are in the window; the day-2 alerts are history.
      expect(events.map((e) => e.dedupeKey).sort()).toEqual([
        'apy_change:acme-live-usdc-flex:2024-06-06',
        'tvl_alert:acme-live-usdc-core:2024-06-06',
      ]);
    });
  });
});
