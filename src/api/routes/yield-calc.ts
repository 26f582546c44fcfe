/**
 * GET /api/partner/products/{slug}/yield-calc?amount=: a projection (not a guarantee) of a new
 * deposit's annual and monthly yield at the product's latest net APY. It prices a new deposit, so a
 * paused product answers 503 product_paused and a deprecated one 410 product_deprecated.
 */
import { type FastifyPluginAsyncTypebox, Type } from '@fastify/type-provider-typebox';
import type { ProductsRepo } from '../../db/products.ts';
import type { SnapshotReads } from '../../db/snapshot-reads.ts';
import { parseAmount, projectYield } from '../../money/index.ts';
import { ApiError } from '../errors.ts';
import { partnerOf } from '../partner-scope.ts';
import { resolveProduct } from '../product-access.ts';
import { DecimalString, Ok, SlugParams } from '../schemas.ts';

export const YieldProjection = Type.Object(
  {
    principal: DecimalString('The amount, normalised, in whole asset units'),
    annual_yield: DecimalString('principal × apy, toward zero to asset decimals'),
    monthly_yield: DecimalString(
      'principal × ((1 + apy)^(1/12) − 1), toward zero to asset decimals',
    ),
    net_apy_for_user: DecimalString('The APY used: the latest measured net APY, 6 places'),
  },
  { additionalProperties: false },
);

export function yieldCalcRoute(deps: {
  products: ProductsRepo;
  snapshots: SnapshotReads;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/yield-calc',
      {
        schema: {
          params: SlugParams,
          querystring: Type.Object({
            amount: Type.Optional(
              Type.String({
                description:
                  'Required. Principal in whole asset units: a plain decimal, > 0, ≤ 2^256, at most asset_decimals fractional digits',
              }),
            ),
          }),
          response: { 200: Ok(YieldProjection) },
        },
        config: {
          validationErrorCode: () => 'invalid_amount',
          errorCodes: [
            'invalid_amount',
            'not_found',
            'not_owned',
            'engine_not_deployed',
            'product_paused',
            'product_deprecated',
            'service_unavailable',
          ],
        },
      },
      async (request, reply) => {
        const raw = request.query.amount;
        // Shape first (before the slug): a plain positive decimal within 2^256. The decimals limit
        // needs the product, so it is checked once the product is known.
        if (!parseAmount(raw, 77).ok) throw new ApiError('invalid_amount');
        const product = await resolveProduct(
          deps.products,
          partnerOf(request),
          request.params.slug,
          'new_deposit',
        );
        const amount = parseAmount(raw, product.assetDecimals);
        if (!amount.ok) {
          throw new ApiError(
            'invalid_amount',
            `amount has more than ${product.assetDecimals} decimal places.`,
          );
        }
        const apy = await deps.snapshots.latestNetApy(product.id);
        if (apy === undefined) {
          throw new ApiError(
            'service_unavailable',
            'No APY has been measured for this product yet; retry after its first full day.',
          );
        }
        reply.header('cache-control', 'no-store');
        return {
          success: true as const,
          data: projectYield(amount.base, product.assetDecimals, apy),
        };
      },
    );
  };
}
