/**
 * The read cache: served without a database round trip while nothing changes, and invalidated in
 * every API process (two apps on one database stand for two processes) by the triggers' version
 * bump when a product status, a snapshot or a key changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';
import type { buildApp } from '../../src/server/app.ts';
import { address, buildTestApp, deployed, newProduct } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/process.ts';
import { insertSnapshots } from '../helpers/snapshots.ts';

const POLL_MS = 50;
/**
 * Awaits what a poll brings, instead of sleeping a few intervals: on a loaded machine a timer can
 * fire late, and then a fixed sleep fails while the cache is right.
 */
const BY_THE_POLL_MS = 10_000;

describe.each(storageEngines())('read cache on %s', (engine) => {
  let t: TestDatabase;
  let apps: Array<Awaited<ReturnType<typeof buildApp>>>;
  let key: string;
  let keyId: string;
  let product: Product;
  let contracts: ContractCheck[];

  beforeAll(async () => {
    t = await freshDatabase(engine);
    const partner = await createPartnersRepo(t.db).create('Acme');
    product = await createProductsRepo(t.db).create(
      newProduct({
        partnerId: partner.id,
        engineName: 'E',
        engineSymbol: 'E',
        deployed: deployed(address(1), { shareDecimals: 12, at: new Date() }),
      }),
    );
    const created = await createApiKeysRepo(t.db).create(partner.id, 'live');
    key = created.key;
    keyId = created.record.id;
    apps = [];
    contracts = [];
    for (let i = 0; i < 2; i++) {
      const app = await buildTestApp({
        db: t.db,
        readCache: { pollMs: POLL_MS },
      });
      contracts.push(attachContractCheck(app));
      await app.ready();
      apps.push(app);
    }
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await t.drop();
  });

  const get = (i: number, url: string) => apps[i]!.inject({ url, headers: { 'x-api-key': key } });

  it('serves repeated reads from memory: no query reaches the database', async () => {
    const query = t.db.query.bind(t.db);
    let queries = 0;
    t.db.query = ((sql: string, params?: readonly unknown[]) => {
      if (!sql.includes('data_versions')) queries++; // the background poll is not the request path
      return query(sql, params);
    }) as typeof t.db.query;
    try {
      // Warm, once the first poll has read the version (nothing is cached before it answers).
      await waitFor(
        async () => {
          await get(0, '/api/partner/products');
          queries = 0;
          await get(0, '/api/partner/products');
          return queries === 0 || undefined;
        },
        BY_THE_POLL_MS,
        'a read served from the cache',
      );
      for (let i = 0; i < 20; i++)
        expect((await get(0, '/api/partner/products')).statusCode).toBe(200);
      expect(queries).toBe(0);
    } finally {
      t.db.query = query;
    }
  });

  it('a status change reaches every process within the poll interval', async () => {
    for (const i of [0, 1]) {
      expect((await get(i, '/api/partner/products/core')).json().data.status).toBe('active');
    }
    await createProductsRepo(t.db).setPauseReasons(product.id, { operatorPaused: true });
    for (const i of [0, 1]) {
      const status = async () => (await get(i, '/api/partner/products/core')).json().data.status;
      await waitFor(
        async () => (await status()) === 'paused' || undefined,
        BY_THE_POLL_MS,
        'paused',
      );
      expect(await status()).toBe('paused');
    }
    await createProductsRepo(t.db).setPauseReasons(product.id, { operatorPaused: false });
  });

  it('a new snapshot reaches latest_metrics and apy-history', async () => {
    expect((await get(1, '/api/partner/products/core')).json().data.latest_metrics).toBeNull();
    await insertSnapshots(t.db, product.id, [
      {
        date: '2026-01-01',
        totalAssets: 1_000_000n,
        underlyingApy: '0.050000',
        netApy: '0.040000',
      },
    ]);
    const latest = async () =>
      (await get(1, '/api/partner/products/core')).json().data.latest_metrics;
    await waitFor(async () => (await latest()) ?? undefined, BY_THE_POLL_MS, 'latest_metrics');
    expect(await latest()).toMatchObject({
      as_of_date: '2026-01-01',
      engine_total_assets: '1',
    });
  });

  it('a revoked key stops working in every process within the poll interval', async () => {
    for (const i of [0, 1]) expect((await get(i, '/api/partner/products')).statusCode).toBe(200);
    await createApiKeysRepo(t.db).revoke(keyId);
    for (const i of [0, 1]) {
      const code = async () => (await get(i, '/api/partner/products')).json().code;
      await waitFor(
        async () => (await code()) === 'revoked_api_key' || undefined,
        BY_THE_POLL_MS,
        'the revocation',
      );
      expect(await code()).toBe('revoked_api_key');
    }
  });

  it('every response of both processes matches the OpenAPI document', () => {
    for (const contract of contracts) {
      expect(contract.checked()).toBeGreaterThan(0);
      contract.assertClean();
    }
  });
});
