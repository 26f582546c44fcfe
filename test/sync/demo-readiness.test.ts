/**
 * When the demo is ready (issue #30 item 3): every product deployed before today has its row for
 * yesterday. A product deployed today does not hold it back; a product one day short does. On
 * both storage engines.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProductsRepo } from '../../src/db/products.ts';
import { createSnapshotsRepo, type Snapshot } from '../../src/db/snapshots.ts';
import { demoHistory } from '../../src/sync/demo-readiness.ts';
import { address, deployed, newProduct, partnerWithKey } from '../helpers/builders.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const NOW = new Date('2026-11-27T09:00:00Z');

function row(productId: string, date: string): Snapshot {
  return {
    productId,
    date,
    blockNumber: 1n,
    blockTimestamp: new Date(`${date}T23:59:59Z`),
    engineTotalAssets: 1n,
    engineTotalSupply: 1n,
    underlyingTotalAssets: 1n,
    underlyingTotalSupply: 1n,
    serviceFeeAssetsTotal: 0n,
    partnerFeeAssetsTotal: 0n,
    serviceFeePending: 0n,
    partnerFeePending: 0n,
    depositsAssets: 0n,
    withdrawalsAssets: 0n,
    underlyingApy: '0.050000',
    netApyForUser: '0.040000',
    dailyYieldAssets: 0n,
    dailyPartnerFee: 0n,
    dailyServiceFee: 0n,
  };
}

describe.each(storageEngines())('demo readiness on %s', (engine) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase(engine);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('is ready once every product deployed before today has yesterday’s row', async () => {
    const products = createProductsRepo(t.db);
    const snapshots = createSnapshotsRepo(t.db);
    expect(await demoHistory(t.db, 31337, NOW)).toEqual({
      ready: false,
      through: null,
      missing: 0,
    });
    const { partner } = await partnerWithKey(t.db);
    const old = await products.create(
      newProduct({
        partnerId: partner.id,
        slug: 'old',
        deployed: deployed(address(10), { at: new Date('2026-06-01T00:00:00Z') }),
      }),
    );
    // Deployed today (the demo's launch product): no closed day, not waited for.
    await products.create(
      newProduct({
        partnerId: partner.id,
        slug: 'launch',
        deployed: deployed(address(11), { at: new Date('2026-11-27T08:00:00Z') }),
      }),
    );
    expect(await demoHistory(t.db, 31337, NOW)).toEqual({
      ready: false,
      through: null,
      missing: 1,
    });
    await snapshots.insert(row(old.id, '2026-11-25'));
    expect(await demoHistory(t.db, 31337, NOW)).toEqual({
      ready: false,
      through: '2026-11-25',
      missing: 1,
    });
    await snapshots.insert(row(old.id, '2026-11-26'));
    expect(await demoHistory(t.db, 31337, NOW)).toEqual({
      ready: true,
      through: '2026-11-26',
      missing: 0,
    });
    // Another chain's products are not the demo's.
    expect((await demoHistory(t.db, 8453, NOW)).ready).toBe(false);
  });
});
