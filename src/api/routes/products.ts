/**
 * GET /api/partner/products and GET /api/partner/products/{slug}: the caller's products of its key's
 * environment, with the latest daily snapshot. Detail answers in every state (DECISIONS).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Product as ProductRecord, ProductsRepo } from '../../db/products.ts';
import { presentedApys, type SnapshotReads, type SnapshotView } from '../../db/snapshot-reads.ts';
import { holdAnswer } from '../../http/held-answers.ts';
import { type ReadCache, sendCachedJson } from '../../http/read-cache.ts';
import { ApyBasisSchema, DecimalString, Ok, RealisedApy, SlugParams } from '../../http/schemas.ts';
import { formatUnits } from '../../money/index.ts';
import { partnerOf } from '../partner-identity.ts';
import { productOf } from '../product-access.ts';

export const LatestMetrics = Type.Object(
  {
    as_of_date: Type.String({ format: 'date', description: 'UTC day of the snapshot' }),
    engine_total_assets: DecimalString('Total assets in the engine, in whole asset units'),
    underlying_apy: DecimalString('APY of the underlying vault, decimal fraction, 6 places'),
    net_apy_for_user: DecimalString(
      'APY after fees of a holder in the pool (on an asynchronous product, open redeem requests are not part of it), decimal fraction, 6 places',
    ),
    apy_basis: ApyBasisSchema,
    net_apy_7d: RealisedApy(
      'Net APY realised over the last 7 days: the pool share price at the boundaries of the day 7 days before `as_of_date` and of `as_of_date`, annualised like `net_apy_for_user`: (price ratio)^(365/7) − 1, 6 places. Null until the product has 7 days of history',
    ),
    net_apy_30d: RealisedApy(
      'Net APY realised over the last 30 days, as `net_apy_7d` with 30 days: (price ratio)^(365/30) − 1. Null until the product has 30 days of history',
    ),
    underlying_apy_7d: RealisedApy(
      "The underlying vault's APY realised over the last 7 days (its totalAssets/totalSupply at the same two boundaries). Null until the product has 7 days of history",
    ),
    underlying_apy_30d: RealisedApy(
      "The underlying vault's APY realised over the last 30 days. Null until the product has 30 days of history",
    ),
  },
  { title: 'LatestMetrics', additionalProperties: false },
);

export const Product = Type.Object(
  {
    slug: Type.String(),
    partner: Type.String({ description: 'Partner display name' }),
    chain: Type.String(),
    chain_id: Type.Integer(),
    engine_contract_address: Type.Union([Type.String(), Type.Null()], {
      description: 'EIP-55 address of the engine; null while pending_deploy',
    }),
    underlying_vault_address: Type.String(),
    asset_symbol: Type.String(),
    asset_address: Type.String(),
    asset_decimals: Type.Integer(),
    service_fee_bps: Type.Integer(),
    partner_fee_bps: Type.Integer(),
    display_name: Type.String(),
    risk_label: Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]),
    status: Type.Union([
      Type.Literal('pending_deploy'),
      Type.Literal('active'),
      Type.Literal('paused'),
      Type.Literal('deprecated'),
    ]),
    latest_metrics: Type.Union([LatestMetrics, Type.Null()], {
      description:
        'Latest daily snapshot; null while pending_deploy. Otherwise always present, with APYs of ' +
        'the basis `apy_basis` names; the one exception is a product whose underlying vault is itself ' +
        'less than a day old (no APY can be measured on any basis yet): null until its first day closes.',
    }),
  },
  { title: 'Product', additionalProperties: false },
);

export interface ProductsRouteDeps {
  cache: ReadCache;
  products: ProductsRepo;
  snapshots: SnapshotReads;
  chainName: (chainId: number) => string;
}

function latestMetrics(p: ProductRecord, s: SnapshotView | undefined) {
  if (p.status === 'pending_deploy' || !s) return null;
  const apys = presentedApys(s);
  if (!apys) return null; // the underlying itself has no measured day yet (see the schema)
  return {
    as_of_date: s.date,
    engine_total_assets: formatUnits(s.engineTotalAssets, p.assetDecimals),
    underlying_apy: apys.underlyingApy,
    net_apy_for_user: apys.netApyForUser,
    apy_basis: apys.basis,
    net_apy_7d: s.netApy7d,
    net_apy_30d: s.netApy30d,
    underlying_apy_7d: s.underlyingApy7d,
    underlying_apy_30d: s.underlyingApy30d,
  };
}

function present(p: ProductRecord, s: SnapshotView | undefined, chainName: (id: number) => string) {
  return {
    slug: p.slug,
    partner: p.partnerName,
    chain: chainName(p.chainId),
    chain_id: p.chainId,
    engine_contract_address: p.engineAddress,
    underlying_vault_address: p.underlyingVaultAddress,
    asset_symbol: p.assetSymbol,
    asset_address: p.assetAddress,
    asset_decimals: p.assetDecimals,
    service_fee_bps: p.serviceFeeBps,
    partner_fee_bps: p.partnerFeeBps,
    display_name: p.displayName,
    risk_label: p.riskLabel,
    status: p.status,
    latest_metrics: latestMetrics(p, s),
  };
}

export function productsRoutes(deps: ProductsRouteDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/api/partner/products',
      {
        config: { cacheControl: 'private, max-age=60', heldAnswers: true },
        schema: {
          operationId: 'listProducts',
          summary: 'List products',
          description:
            "Every product of the key's partner in the key's environment (live or sandbox), across chains, with its latest daily metrics.",
          tags: ['Products'],
          response: { 200: Ok(Type.Array(Product)) },
        },
      },
      // Not async: a cached list is sent without a promise (sendCachedJson).
      (request, reply) => {
        const caller = partnerOf(request);
        // The list is a function of the caller's scope and the read cache's generation.
        const generation = deps.cache.generation();
        holdAnswer(request, () => deps.cache.generation() === generation);
        return sendCachedJson(
          deps.cache,
          request,
          reply,
          `products:${caller.partnerId}:${caller.environment}`,
          async () => {
            const list = await deps.products.listForPartner(caller.partnerId, caller.environment);
            const latest = await deps.snapshots.latestFor(list.map((p) => p.id));
            return {
              success: true as const,
              data: list.map((p) => present(p, latest.get(p.id), deps.chainName)),
            };
          },
        );
      },
    );

    app.get(
      '/api/partner/products/:slug',
      {
        schema: {
          operationId: 'getProduct',
          summary: 'Get a product',
          description: 'One product, in every state (pending_deploy, active, paused, deprecated).',
          tags: ['Products'],
          params: SlugParams,
          response: { 200: Ok(Product) },
        },
        config: { cacheControl: 'private, max-age=60', serves: 'any', heldAnswers: true },
      },
      async (request, reply) => {
        const generation = deps.cache.generation();
        const p = await productOf(request, deps.products);
        holdAnswer(request, () => deps.cache.generation() === generation);
        await sendCachedJson(deps.cache, request, reply, `product:${p.id}`, async () => {
          const latest = await deps.snapshots.latestFor([p.id]);
          return { success: true as const, data: present(p, latest.get(p.id), deps.chainName) };
        });
        return reply;
      },
    );
  };
}
