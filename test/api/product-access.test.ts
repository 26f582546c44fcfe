import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveProduct, type StateRule } from '../../src/api/product-access.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type ProductStatus } from '../../src/db/products.ts';
import { ApiError } from '../../src/http/errors.ts';
import { newProduct } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

const ADDR = '0x0000000000000000000000000000000000000001' as const;

describe('product access rules', () => {
  let t: TestDatabase;
  let acme: string;
  let bravo: string;
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    const partners = createPartnersRepo(t.db);
    acme = (await partners.create('Acme')).id;
    bravo = (await partners.create('Bravo')).id;
    const products = createProductsRepo(t.db);
    const base = {
      displayName: 'P',
      engineName: 'E',
      engineSymbol: 'E',
      underlyingVaultAddress: ADDR,
      assetAddress: ADDR,
      serviceFeeRecipient: ADDR,
      partnerFeeRecipient: ADDR,
    };
    const statuses: ProductStatus[] = ['pending_deploy', 'active', 'paused', 'deprecated'];
    for (const [i, status] of statuses.entries()) {
      await products.create(
        newProduct({
          ...base,
          partnerId: acme,
          environment: 'live',
          slug: `acme-${status.replace('_', '-')}`,
          ...(status === 'pending_deploy'
            ? {}
            : {
                deployed: {
                  engineAddress: `0x${String(i + 10).padStart(40, '0')}` as `0x${string}`,
                  shareDecimals: 12,
                  block: 1n,
                  at: new Date(),
                  status,
                },
              }),
        }),
      );
    }
    await products.create(
      newProduct({ ...base, partnerId: acme, environment: 'test', slug: 'acme-sandbox' }),
    );
    await products.create(
      newProduct({ ...base, partnerId: bravo, environment: 'live', slug: 'bravo-live' }),
    );
  });
  afterAll(async () => {
    await t.drop();
  });

  const caller = (partnerId: string, environment: 'live' | 'test') => ({
    keyId: 'key_x',
    partnerId,
    partnerName: 'x',
    environment,
  });
  const codeOf = async (slug: string, rule: StateRule, who = caller(acme, 'live')) => {
    try {
      return (await resolveProduct(createProductsRepo(t.db), who, slug, rule)).slug;
    } catch (e) {
      if (e instanceof ApiError) return e.code;
      throw e;
    }
  };

  it('unknown slug 404, other partner 403, own product in the other environment 404', async () => {
    expect(await codeOf('nope', 'any')).toBe('not_found');
    expect(await codeOf('bravo-live', 'any')).toBe('not_owned');
    expect(await codeOf('acme-sandbox', 'any')).toBe('not_found');
    expect(await codeOf('acme-sandbox', 'any', caller(acme, 'test'))).toBe('acme-sandbox');
    expect(await codeOf('acme-active', 'any', caller(acme, 'test'))).toBe('not_found');
  });

  it.each([
    ['acme-pending-deploy', 'acme-pending-deploy', 'engine_not_deployed', 'engine_not_deployed'],
    ['acme-active', 'acme-active', 'acme-active', 'acme-active'],
    ['acme-paused', 'acme-paused', 'acme-paused', 'product_paused'],
    ['acme-deprecated', 'acme-deprecated', 'acme-deprecated', 'product_deprecated'],
  ])('%s: any → %s, deployed → %s, new_deposit → %s', async (slug, any, deployed, newDeposit) => {
    expect(await codeOf(slug, 'any')).toBe(any);
    expect(await codeOf(slug, 'deployed')).toBe(deployed);
    expect(await codeOf(slug, 'new_deposit')).toBe(newDeposit);
  });
});
