/** The products repository on every engine: provisioning, status moves, pause-reason derivation. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/client.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type NewProduct } from '../../src/db/products.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const A = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const B = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';

function newProduct(partnerId: string, slug: string, extra: Partial<NewProduct> = {}): NewProduct {
  return {
    partnerId,
    environment: 'live',
    slug,
    displayName: 'USDC Core',
    riskLabel: 'low',
    chainId: 31337,
    vaultKind: 'sync',
    engineName: 'Core',
    engineSymbol: 'yC',
    underlyingVaultAddress: A,
    assetAddress: B,
    assetSymbol: 'USDC',
    assetDecimals: 6,
    serviceFeeBps: 500,
    partnerFeeBps: 1000,
    serviceFeeRecipient: A,
    partnerFeeRecipient: B,
    ...extra,
  };
}

describe.each(storageEngines())('products repository on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const setup = async (): Promise<{ db: Database; partnerId: string }> => {
    const t = await freshDatabase(engine);
    opened.push(t);
    const partner = await createPartnersRepo(t.db).create('Acme');
    return { db: t.db, partnerId: partner.id };
  };

  it('creates a pending product with every field, then deploys it once', async () => {
    const { db, partnerId } = await setup();
    const repo = createProductsRepo(db);
    const p = await repo.create(newProduct(partnerId, 'acme-core', { usdPrice: '0.9998' }));
    expect(p).toMatchObject({
      partnerName: 'Acme',
      status: 'pending_deploy',
      engineAddress: null,
      shareDecimals: null,
      usdPrice: '0.9998',
      chainId: 31337,
      operatorPaused: false,
      chainPaused: false,
      upstreamHalted: false,
    });
    expect(await repo.listPendingDeploy(31337)).toHaveLength(1);
    expect(await repo.listPendingDeploy(1)).toHaveLength(0);

    await repo.recordDeployTx(p.id, `0x${'ab'.repeat(32)}`);
    expect((await repo.getById(p.id))?.deployTxHash).toBe(`0x${'ab'.repeat(32)}`);
    const at = new Date('2026-01-02T03:04:05Z');
    const d = { engineAddress: A, shareDecimals: 12, block: 42n, at } as const;
    expect(await repo.markDeployed(p.id, d)).toBe(true);
    expect(await repo.markDeployed(p.id, d)).toBe(false); // already moved
    const after = await repo.getBySlug('acme-core');
    expect(after).toMatchObject({ status: 'active', engineAddress: A, shareDecimals: 12 });
    expect(after?.deployedBlock).toBe(42n);
    expect(after?.deployedAt?.toISOString()).toBe(at.toISOString());
    expect(await repo.listDeployedOnChain(31337)).toHaveLength(1);
    expect(await repo.listPendingDeploy(31337)).toHaveLength(0);
  });

  it('derives paused from any reason and active only when every reason is gone', async () => {
    const { db, partnerId } = await setup();
    const repo = createProductsRepo(db);
    const p = await repo.create(
      newProduct(partnerId, 'acme-core', {
        deployed: {
          engineAddress: A,
          shareDecimals: 12,
          block: 1n,
          at: new Date(),
          status: 'active',
        },
      }),
    );
    expect(await repo.setPauseReasons(p.id, { operatorPaused: true })).toEqual({
      before: 'active',
      after: 'paused',
    });
    expect(await repo.setPauseReasons(p.id, { chainPaused: true })).toEqual({
      before: 'paused',
      after: 'paused',
    });
    // The operator resumes, but the engine is still paused on chain: stays paused.
    expect(await repo.setPauseReasons(p.id, { operatorPaused: false })).toEqual({
      before: 'paused',
      after: 'paused',
    });
    expect(await repo.setPauseReasons(p.id, { chainPaused: false, upstreamHalted: true })).toEqual({
      before: 'paused',
      after: 'paused',
    });
    expect(await repo.setPauseReasons(p.id, { upstreamHalted: false })).toEqual({
      before: 'paused',
      after: 'active',
    });
    expect(await repo.getById(p.id)).toMatchObject({
      status: 'active',
      operatorPaused: false,
      chainPaused: false,
      upstreamHalted: false,
    });
  });

  it('provisions a paused engine as paused on chain, not by the operator', async () => {
    const { db, partnerId } = await setup();
    const p = await createProductsRepo(db).create(
      newProduct(partnerId, 'acme-boost', {
        deployed: {
          engineAddress: A,
          shareDecimals: 12,
          block: 1n,
          at: new Date(),
          status: 'paused',
        },
      }),
    );
    expect(p).toMatchObject({ status: 'paused', operatorPaused: false, chainPaused: true });
  });

  it('never moves pending or deprecated products by pause reasons; deprecated is final', async () => {
    const { db, partnerId } = await setup();
    const repo = createProductsRepo(db);
    const pending = await repo.create(newProduct(partnerId, 'acme-next'));
    expect(await repo.setPauseReasons(pending.id, { chainPaused: true })).toEqual({
      before: 'pending_deploy',
      after: 'pending_deploy',
    });
    expect(await repo.markDeprecated(pending.id)).toBe(false);

    const live = await repo.create(
      newProduct(partnerId, 'acme-core', {
        deployed: {
          engineAddress: A,
          shareDecimals: 12,
          block: 1n,
          at: new Date(),
          status: 'paused',
        },
      }),
    );
    expect(await repo.markDeprecated(live.id)).toBe(true);
    expect(await repo.markDeprecated(live.id)).toBe(false);
    expect(await repo.setPauseReasons(live.id, { chainPaused: false })).toEqual({
      before: 'deprecated',
      after: 'deprecated',
    });
    expect(
      await repo.markDeployed(live.id, {
        engineAddress: B,
        shareDecimals: 12,
        block: 2n,
        at: new Date(),
      }),
    ).toBe(false);
    expect((await repo.getById(live.id))?.status).toBe('deprecated');
  });

  it('rejects a second product with the same slug', async () => {
    const { db, partnerId } = await setup();
    const repo = createProductsRepo(db);
    await repo.create(newProduct(partnerId, 'acme-core'));
    await expect(repo.create(newProduct(partnerId, 'acme-core'))).rejects.toThrow();
  });

  it('the schema keeps the product rules (db/product-rules.ts) whatever path writes', async () => {
    const { db, partnerId } = await setup();
    const repo = createProductsRepo(db);
    for (const slug of ['Bad_Slug', 'x', '-lead', 'a'.repeat(64)]) {
      await expect(repo.create(newProduct(partnerId, slug)), slug).rejects.toThrow(
        /products_slug_pattern/,
      );
    }
    await expect(
      repo.create(newProduct(partnerId, 'over-cap', { serviceFeeBps: 3000, partnerFeeBps: 2001 })),
    ).rejects.toThrow(/products_total_fee_cap/);
    const atCap = await repo.create(
      newProduct(partnerId, 'at-cap', { serviceFeeBps: 3000, partnerFeeBps: 2000 }),
    );
    expect(atCap.slug).toBe('at-cap');
    await expect(
      db.query('UPDATE products SET partner_fee_bps = 2001 WHERE id = $1', [atCap.id]),
    ).rejects.toThrow(/products_total_fee_cap/);
  });
});
