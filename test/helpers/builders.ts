/**
 * Shared test builders: a product (every field a test does not care about filled with a valid
 * value), a deployed engine for it, an address from a number, and the app with a quiet logger. A
 * test spells out only what it is about: `newProduct({ partnerId, slug: 'core', deployed:
 * deployed(address(1)) })`.
 */
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import type { Queryable } from '../../src/db/client.ts';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import type { Environment, NewProduct, ProductStatus } from '../../src/db/products.ts';
import { type AppDeps, buildApp } from '../../src/server/app.ts';
import { captureLogger } from './logs.ts';

/** A distinct, valid address for a small number: `address(1)` is 0x…0001. */
export const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as `0x${string}`;

/** A product on the local chain, synchronous, 1 % + 1 % fees, USDC with 6 decimals. */
export function newProduct(
  fields: Pick<NewProduct, 'partnerId'> & Partial<NewProduct>,
): NewProduct {
  return {
    environment: 'live',
    slug: 'core',
    displayName: 'Core',
    riskLabel: 'low',
    chainId: 31337,
    vaultKind: 'sync',
    engineName: 'Engine',
    engineSymbol: 'yUSDC',
    underlyingVaultAddress: address(2),
    assetAddress: address(3),
    assetSymbol: 'USDC',
    assetDecimals: 6,
    serviceFeeBps: 100,
    partnerFeeBps: 100,
    serviceFeeRecipient: address(4),
    partnerFeeRecipient: address(5),
    ...fields,
  };
}

/** The `deployed` part of a product whose engine is at `engineAddress`. */
export function deployed(
  engineAddress: `0x${string}`,
  fields: Partial<NonNullable<NewProduct['deployed']>> & {
    status?: Exclude<ProductStatus, 'pending_deploy'>;
  } = {},
): NonNullable<NewProduct['deployed']> {
  return {
    engineAddress,
    shareDecimals: 6,
    block: 1n,
    at: new Date('2026-01-01T00:00:00Z'),
    status: 'active',
    ...fields,
  };
}

/** The app on `db`, logging into a capture nobody reads unless it passes its own logger. */
export function buildTestApp(deps: Pick<AppDeps, 'db'> & Partial<AppDeps>) {
  return buildApp({ logger: captureLogger().logger, ...deps });
}

/** A partner and an API key of theirs (`live` unless said): the usual start of an API test. */
export async function partnerWithKey(
  db: Queryable,
  name = 'Acme',
  environment: Environment = 'live',
): Promise<{ partner: Partner; key: string }> {
  const partner = await createPartnersRepo(db).create(name);
  const { key } = await createApiKeysRepo(db).create(partner.id, environment);
  return { partner, key };
}
