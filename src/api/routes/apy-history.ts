/**
 * GET /api/partner/products/{slug}/apy-history?days=7|30|180: one row per measured day, newest
 * first, over the `days` days ending at the latest finished day (the newest day with a final
 * snapshot, never today): N rows when N days of history exist; a day without a snapshot is absent.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { todayUtc, trailingDays } from '../../http/date-range.ts';
import type { SnapshotRouteDeps } from '../../http/dependencies.ts';
import { ApiError } from '../../http/errors.ts';
import { holdAnswer } from '../../http/held-answers.ts';
import { sendCachedJson } from '../../http/read-cache.ts';
import { DecimalString, Ok, RealisedApy, SlugParams } from '../../http/schemas.ts';
import { productOf } from '../product-access.ts';

export const ALLOWED_DAYS = [7, 30, 180] as const;

export const ApyHistoryRow = Type.Object(
  {
    date: Type.String({ format: 'date' }),
    underlying_apy: DecimalString('APY of the underlying vault, decimal fraction, 6 places'),
    net_apy_for_user: DecimalString(
      'APY after fees of a holder in the pool (on an asynchronous product, open redeem requests are not part of it), decimal fraction, 6 places',
    ),
    net_apy_7d: RealisedApy(
      'Net APY realised over the 7 days ending at `date` ((price ratio)^(365/7) − 1, as latest_metrics.net_apy_7d); null until 7 days of history exist',
    ),
    net_apy_30d: RealisedApy(
      'Net APY realised over the 30 days ending at `date`; null until 30 days of history exist',
    ),
    underlying_apy_7d: RealisedApy(
      "The underlying vault's APY realised over the 7 days ending at `date`; null until 7 days of history exist",
    ),
    underlying_apy_30d: RealisedApy(
      "The underlying vault's APY realised over the 30 days ending at `date`; null until 30 days of history exist",
    ),
  },
  { title: 'ApyHistoryRow', additionalProperties: false },
);

/** `days` as the spec allows it: absent → 30; exactly "7", "30" or "180"; anything else invalid_days. */
export function parseDays(raw: string | undefined): number {
  if (raw === undefined) return 30;
  const n = ALLOWED_DAYS.find((d) => String(d) === raw);
  if (n === undefined) throw new ApiError('invalid_days');
  return n;
}

export function apyHistoryRoute(deps: SnapshotRouteDeps): FastifyPluginAsyncTypebox {
  const now = deps.now ?? (() => new Date());
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/apy-history',
      {
        schema: {
          operationId: 'getApyHistory',
          summary: 'APY history',
          description:
            "One row per UTC day of the window (`days`, default 30), newest first, ending at the latest finished day: `days=N` gives N rows when N days of history exist. A day without a snapshot is absent, never invented. Only days of the engine's own (no launch-day estimate).",
          tags: ['Products'],
          params: SlugParams,
          querystring: Type.Object({
            days: Type.Optional(
              Type.String({
                enum: ['7', '30', '180'],
                description:
                  'Window length in days, ending at the latest finished day (the newest day with a snapshot; today never has one). Default 30.',
              }),
            ),
          }),
          response: { 200: Ok(Type.Array(ApyHistoryRow)) },
        },
        config: {
          cacheControl: 'private, max-age=300',
          validationErrorCode: () => 'invalid_days',
          serves: 'deployed',
          errorCodes: ['invalid_days'],
          heldAnswers: true,
        },
      },
      async (request, reply) => {
        const generation = deps.cache.generation();
        const day = todayUtc(now());
        const days = parseDays(request.query.days);
        const product = await productOf(request, deps.products);
        // The window ends at the latest finished day (date-range.ts): N rows when N days exist.
        const latest = await deps.snapshots.latestFinalDate(product.id);
        const { from, to } = trailingDays(days, now(), latest);
        // The window moves at midnight; the rows change with the read cache's generation.
        holdAnswer(
          request,
          () => deps.cache.generation() === generation && todayUtc(now()) === day,
        );
        await sendCachedJson(
          deps.cache,
          request,
          reply,
          `apy:${product.id}:${from}:${to}`,
          async () => {
            const rows = await deps.snapshots.apyHistory(product.id, from, to);
            return {
              success: true as const,
              data: rows.slice(0, days).map((r) => ({
                date: r.date,
                underlying_apy: r.underlyingApy!,
                net_apy_for_user: r.netApyForUser!,
                net_apy_7d: r.netApy7d,
                net_apy_30d: r.netApy30d,
                underlying_apy_7d: r.underlyingApy7d,
                underlying_apy_30d: r.underlyingApy30d,
              })),
            };
          },
        );
        return reply;
      },
    );
  };
}
