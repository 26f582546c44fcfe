/** GET /api/partner/products/{slug}/health: the live operational flags that gate the deposit button. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ScheduledFeeChange } from '../../chain/read-scheduled-fee-change.ts';
import type { ProductsRepo } from '../../db/products.ts';
import type { ChainReader, HealthReading } from '../../http/chain-reader.ts';
import { holdAnswer } from '../../http/held-answers.ts';
import type { ReadCache } from '../../http/read-cache.ts';
import { Ok, SlugParams } from '../../http/schemas.ts';
import { productOf } from '../product-access.ts';
import { renderedAnswers, sendJsonText } from '../rendered-answers.ts';

export const Health = Type.Object(
  {
    is_paused: Type.Boolean({ description: 'Pause state of the engine contract' }),
    underlying_ok: Type.Boolean({
      description: 'The underlying vault works normally: not paused upstream, accepting deposits',
    }),
    last_block: Type.Integer({ description: 'Block the flags were read at' }),
    notes: Type.String({ description: 'Free text; may be empty' }),
  },
  { title: 'Health', additionalProperties: false },
);

/**
 * A fee increase waits for the engine's notice period: service_fee_bps/partner_fee_bps keep showing
 * the fees in force, the note announces the new ones and when they may apply (docs/engine.md).
 */
function scheduledFeeNote(c: ScheduledFeeChange): string {
  const at = new Date(Number(c.effectiveAt) * 1000).toISOString().replace('.000Z', 'Z');
  return `Fee change scheduled: service ${c.serviceFeeBps} bps, partner ${c.partnerFeeBps} bps, may apply from ${at}; the fees in force apply until then.`;
}

export function productHealthRoute(deps: {
  products: ProductsRepo;
  chain: ChainReader;
  /** Its generation tells whether the product read is still the read model's (held answers). */
  cache: ReadCache;
}): FastifyPluginAsyncTypebox {
  const rendered = renderedAnswers<HealthReading>();
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/health',
      {
        schema: {
          operationId: 'getProductHealth',
          summary: 'Product health',
          description:
            'Operational flags read from the chain: gate the deposit action on `is_paused` and `underlying_ok`. 503 `chain_rpc_unavailable` when the chain cannot be read (retry after 30 s).',
          tags: ['Positions'],
          params: SlugParams,
          response: { 200: Ok(Health) },
        },
        config: {
          cacheControl: 'private, max-age=60',
          serves: 'deployed',
          errorCodes: ['chain_rpc_unavailable'],
          heldAnswers: true,
        },
      },
      async (request, reply) => {
        const generation = deps.cache.generation();
        const product = await productOf(request, deps.products);
        const h = await deps.chain.readHealth(product, reply.elapsedTime);
        // A function of the product and the reading: held while both are the current ones.
        holdAnswer(
          request,
          () => deps.cache.generation() === generation && deps.chain.cachedHealth(product) === h,
        );
        // A function of the product and the reading alone: rendered once for them.
        const ready = rendered.get(product, h);
        if (ready !== undefined) return sendJsonText(reply, ready);
        const notes = [
          product.status === 'deprecated' ? 'Deprecated: withdrawals only; hide deposits.' : '',
          h.isPaused ? 'Engine paused: deposits are off; withdrawals work.' : '',
          h.underlyingOk ? '' : 'Upstream vault is not accepting deposits.',
          h.exitsLimited
            ? 'Exits are limited upstream: the upstream vault lets out less than the engine holds; maxWithdraw/maxRedeem show what each holder can take out now.'
            : '',
          h.asyncExits
            ? 'Exits are asynchronous: a redeem is requested, then claimed once the upstream vault settles it.'
            : '',
          h.scheduledFeeChange ? scheduledFeeNote(h.scheduledFeeChange) : '',
        ]
          .filter(Boolean)
          .join(' ');
        const answer = {
          success: true as const,
          data: {
            is_paused: h.isPaused,
            underlying_ok: h.underlyingOk,
            last_block: Number(h.lastBlock),
            notes,
          },
        };
        // The route's own serialiser: the very bytes it would send for this answer.
        const body = reply.serialize(answer) as string;
        rendered.set(product, h, body);
        return sendJsonText(reply, body);
      },
    );
  };
}
