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
import type { SnapshotView } from '../../db/snapshot-reads.ts';
import { formatUnits } from '../../money/index.ts';
import { feeStatsRange } from '../date-range.ts';
import type { SnapshotRouteDeps } from '../dependencies.ts';
import { productOf } from '../product-access.ts';
import { sendCachedJson } from '../read-cache.ts';
import { DecimalString, Ok, SlugParams } from '../schemas.ts';

export const FeeStatsRow = Type.Object(
  {
    date: Type.String({ format: 'date' }),
    engine_total_assets: DecimalString(
      'Engine total assets at the end of the day, whole asset units',
    ),
    daily_yield_assets: DecimalString(
      'Gross yield of the day (before fees), whole asset units; negative on a loss',
    ),
    daily_partner_fee_earned: DecimalString(
      'Partner fee earned that day: the change of cumulative_partner_fee_earned since the previous day, whole asset units. Negative when a loss removed a fee that was pending but not yet minted',
    ),
    daily_service_fee_earned: DecimalString(
      'Service fee earned that day, defined as daily_partner_fee_earned, whole asset units',
    ),
    cumulative_partner_fee_earned: DecimalString(
      'Partner fee earned since deployment at the end of the day: minted (cumulative_partner_fee_minted) plus the partner part of the fee pending in the engine at the day-boundary block, whole asset units',
    ),
    cumulative_service_fee_earned: DecimalString(
      'Service fee earned since deployment at the end of the day, defined as cumulative_partner_fee_earned, whole asset units',
    ),
    cumulative_partner_fee_minted: DecimalString(
      "The engine's cumulative partner fee counter at the day-boundary block: fees minted to the partner's recipient so far, valued at accrual, whole asset units",
    ),
    cumulative_service_fee_minted: DecimalString(
      "The engine's cumulative service fee counter at the day-boundary block, whole asset units",
    ),
    net_apy_for_user: DecimalString(
      'APY after fees of a holder in the pool (on an asynchronous product, open redeem requests are not part of it), decimal fraction, 6 places',
    ),
  },
  { additionalProperties: false },
);

/** fee-stats rows as the API serves them (the portal's charts and CSV use the same function). */
export function feeStatsRows(rows: readonly SnapshotView[], assetDecimals: number) {
  const units = (v: bigint | null) => formatUnits(v ?? 0n, assetDecimals);
  return rows.map((r) => ({
    date: r.date,
    engine_total_assets: units(r.engineTotalAssets),
    daily_yield_assets: units(r.dailyYieldAssets),
    daily_partner_fee_earned: units(r.dailyPartnerFee),
    daily_service_fee_earned: units(r.dailyServiceFee),
    cumulative_partner_fee_earned: units(r.cumulativePartnerFeeEarned),
    cumulative_service_fee_earned: units(r.cumulativeServiceFeeEarned),
    cumulative_partner_fee_minted: units(r.cumulativePartnerFeeMinted),
    cumulative_service_fee_minted: units(r.cumulativeServiceFeeMinted),
    net_apy_for_user: r.netApyForUser!,
  }));
}

export function feeStatsRoute(deps: SnapshotRouteDeps): FastifyPluginAsyncTypebox {
  const now = deps.now ?? (() => new Date());
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/fee-stats',
      {
        schema: {
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
          validationErrorCode: () => 'invalid_date',
          serves: 'deployed',
          errorCodes: ['invalid_date', 'range_too_large'],
        },
      },
      async (request, reply) => {
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
        reply.header('cache-control', 'private, max-age=300');
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
