/**
 * GET /api/partner/products/{slug}/fee-schedule: the fees in force and a fee change waiting for its
 * notice period, read from the chain, so a wallet can tell its users before a change applies
 * (docs/engine.md: an increase applies no sooner than its notice period after it is scheduled;
 * the engine keeps charging the fees in force until then).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ProductsRepo } from '../../db/products.ts';
import type { ChainReader } from '../../http/chain-reader.ts';
import { Ok, SlugParams } from '../../http/schemas.ts';
import { productOf } from '../product-access.ts';

const Bps = (description: string) => Type.Integer({ minimum: 0, maximum: 10_000, description });

export const FeeSchedule = Type.Object(
  {
    service_fee_bps: Bps('Service fee in force, basis points of the yield'),
    partner_fee_bps: Bps('Partner fee in force, basis points of the yield'),
    scheduled_change: Type.Union(
      [
        Type.Object(
          {
            service_fee_bps: Bps('Service fee once the change applies'),
            partner_fee_bps: Bps('Partner fee once the change applies'),
            may_apply_from: Type.String({
              format: 'date-time',
              description:
                'UTC; the fees in force apply until the change is applied, at or after this moment',
            }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'A fee change waiting for its notice period; null when none' },
    ),
    last_block: Type.Integer({ description: 'Block the schedule was read at' }),
  },
  { title: 'FeeSchedule', additionalProperties: false },
);

export function feeScheduleRoute(deps: {
  products: ProductsRepo;
  chain: ChainReader;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/fee-schedule',
      {
        schema: {
          operationId: 'getFeeSchedule',
          summary: 'Fee schedule',
          description:
            'The fees in force and a fee change waiting for its notice period, read from the chain: show your users a change before it applies. 503 `chain_rpc_unavailable` when the chain cannot be read (retry after 30 s).',
          tags: ['Products'],
          params: SlugParams,
          response: { 200: Ok(FeeSchedule) },
        },
        config: {
          cacheControl: 'private, max-age=60',
          serves: 'deployed',
          errorCodes: ['chain_rpc_unavailable'],
        },
      },
      async (request, reply) => {
        const product = await productOf(request, deps.products);
        const h = await deps.chain.readHealth(product, reply.elapsedTime);
        const change = h.scheduledFeeChange;
        return {
          success: true as const,
          data: {
            service_fee_bps: product.serviceFeeBps,
            partner_fee_bps: product.partnerFeeBps,
            scheduled_change: change
              ? {
                  service_fee_bps: change.serviceFeeBps,
                  partner_fee_bps: change.partnerFeeBps,
                  may_apply_from: new Date(Number(change.effectiveAt) * 1000).toISOString(),
                }
              : null,
            last_block: Number(h.lastBlock),
          },
        };
      },
    );
  };
}
