/**
 * GET /api/partner/products/{slug}/fee-stats: the daily split of yield between the partner and the
 * service, oldest first, for reconciliation (DECISIONS, "Fee figures"). A fee EARNED up to a day is
 * the engine's minted fee counter plus the fee pending at the day's boundary block (what its next
 * accrual would charge), so the daily figure follows the yield every day; the MINTED counters (what
 * reached the recipients' wallets) are served beside them. All are exact chain reads at the
 * boundary block; the daily figures sum to the cumulative earned figure to the base unit.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { feeStatsRange, todayUtc } from '../../http/date-range.ts';
import type { SnapshotRouteDeps } from '../../http/dependencies.ts';
import { FeeStatsRow, feeStatsRows } from '../../http/fee-stats-view.ts';
import { holdAnswer } from '../../http/held-answers.ts';
import { sendCachedJson } from '../../http/read-cache.ts';
import { Ok, SlugParams } from '../../http/schemas.ts';
import { productOf } from '../product-access.ts';

export function feeStatsRoute(deps: SnapshotRouteDeps): FastifyPluginAsyncTypebox {
  const now = deps.now ?? (() => new Date());
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/fee-stats',
      {
        schema: {
          operationId: 'getFeeStats',
          summary: 'Fee-split statistics',
          description:
            'Daily yield, partner fee and service fee, oldest first, for reconciliation. Without dates: the 30 days ending at the latest finished day. Only `start_date`: up to today. Only `end_date`: the 30 days ending then. A span over 365 days is 400 `range_too_large`.',
          tags: ['Products'],
          params: SlugParams,
          querystring: Type.Object({
            start_date: Type.Optional(
              Type.String({
                description:
                  'YYYY-MM-DD, UTC, inclusive. Alone: up to today. Neither date: the 30 days ending at the latest finished day (the newest day with a snapshot; today never has one).',
              }),
            ),
            end_date: Type.Optional(
              Type.String({
                description: 'YYYY-MM-DD, UTC, inclusive. Alone: the 30 days ending then.',
              }),
            ),
          }),
          response: { 200: Ok(Type.Array(FeeStatsRow)) },
        },
        config: {
          cacheControl: 'private, max-age=300',
          validationErrorCode: () => 'invalid_date',
          serves: 'deployed',
          errorCodes: ['invalid_date', 'range_too_large'],
          heldAnswers: true,
        },
      },
      async (request, reply) => {
        const generation = deps.cache.generation();
        const day = todayUtc(now());
        const { start_date: start, end_date: end } = request.query;
        // Dates are checked before the slug (DECISIONS: request shape, then slug).
        feeStatsRange(start, end, now());
        const product = await productOf(request, deps.products);
        // Without dates the window is the 30 days ending at the latest finished day.
        const latest =
          start === undefined && end === undefined
            ? await deps.snapshots.latestFinalDate(product.id)
            : undefined;
        const { from, to } = feeStatsRange(start, end, now(), latest);
        // The window moves at midnight; the rows change with the read cache's generation.
        holdAnswer(
          request,
          () => deps.cache.generation() === generation && todayUtc(now()) === day,
        );
        await sendCachedJson(
          deps.cache,
          request,
          reply,
          `fees:${product.id}:${from}:${to}`,
          async () => {
            const rows = await deps.snapshots.feeStats(product.id, from, to);
            return { success: true as const, data: feeStatsRows(rows, product.assetDecimals) };
          },
        );
        return reply;
      },
    );
  };
}
