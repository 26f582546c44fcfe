/**
 * GET /api/partner/products and GET /api/partner/products/{slug}: the caller's products of its key's
 * environment, with the latest daily snapshot. Detail answers in every state (DECISIONS).
 */
import { type FastifyPluginAsyncTypebox, Type } from '@fastify/type-provider-typebox';
import type { Product as ProductRecord, ProductsRepo } from '../../db/products.ts';
import type { SnapshotReads, SnapshotView } from '../../db/snapshot-reads.ts';
import { formatUnits } from '../../money/index.ts';
import { partnerOf } from '../partner-scope.ts';
import { resolveProduct } from '../product-access.ts';
import { type ReadCache, sendCachedJson } from '../read-cache.ts';
import { DecimalString, Ok, SlugParams } from '../schemas.ts';

const Apy = (description: string) =>
  Type.Union([DecimalString(description), Type.Null()], {
    description: `${description}. Null only on a product's first day, before a day-over-day change exists.`,
  });

export const LatestMetrics = Type.Object(
  {
    as_of_date: Type.String({ format: 'date', description: 'UTC day of the snapshot' }),
    engine_total_assets: DecimalString('Total assets in the engine, in whole asset units'),
    underlying_apy: Apy('APY of the underlying vault, decimal fraction, 6 places'),
    net_apy_for_user: Apy('APY after fees, decimal fraction, 6 places'),
  },
  { additionalProperties: false },
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
        'Latest daily snapshot; null while pending_deploy (and until the first snapshot)',
    }),
  },
  { additionalProperties: false },
);

export interface ProductsRouteDeps {
  cache: ReadCache;
  products: ProductsRepo;
  snapshots: SnapshotReads;
  chainName: (chainId: number) => string;
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
    latest_metrics:
      p.status === 'pending_deploy' || !s
        ? null
        : {
            as_of_date: s.date,
            engine_total_assets: formatUnits(s.engineTotalAssets, p.assetDecimals),
            underlying_apy: s.underlyingApy,
            net_apy_for_user: s.netApyForUser,
          },
  };
}

export function productsRoutes(deps: ProductsRouteDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/api/partner/products',
      { schema: { response: { 200: Ok(Type.Array(Product)) } } },
      async (request, reply) => {
        const caller = partnerOf(request);
        reply.header('cache-control', 'private, max-age=60');
        await sendCachedJson(
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
        return reply;
      },
    );

    app.get(
      '/api/partner/products/:slug',
      {
        schema: { params: SlugParams, response: { 200: Ok(Product) } },
        config: { errorCodes: ['not_found', 'not_owned'] },
      },
      async (request, reply) => {
        const p = await resolveProduct(
          deps.products,
          partnerOf(request),
          request.params.slug,
          'any',
        );
        reply.header('cache-control', 'private, max-age=60');
        await sendCachedJson(deps.cache, request, reply, `product:${p.id}`, async () => {
          const latest = await deps.snapshots.latestFor([p.id]);
          return { success: true as const, data: present(p, latest.get(p.id), deps.chainName) };
        });
        return reply;
      },
    );
  };
}
