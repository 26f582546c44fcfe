/** A product's fee-stats as CSV for any range of days: the API's rows, for reconciliation. */
import type { FastifyPluginAsync } from 'fastify';
import { parseDay } from '../../../http/date-range.ts';
import { ApiError } from '../../../http/errors.ts';
import { feeStatsRows } from '../../../http/fee-stats-view.ts';
import { envParam, type PortalContext, sessionOf } from '../../context.ts';
import { sendProductPage } from './detail.ts';
import { ownProduct } from './shared.ts';

const CSV_COLUMNS = [
  'date',
  'engine_total_assets',
  'daily_yield_assets',
  'daily_partner_fee_earned',
  'daily_service_fee_earned',
  'cumulative_partner_fee_earned',
  'cumulative_service_fee_earned',
  'cumulative_partner_fee_minted',
  'cumulative_service_fee_minted',
  'net_apy_for_user',
] as const;

export function feeStatsCsvRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{
      Params: { env: string; slug: string };
      Querystring: { start_date?: string; end_date?: string };
    }>(
      '/:env/products/:slug/fee-stats.csv',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        const p = await ownProduct(ctx, member, env, request.params.slug);
        const { start_date: start, end_date: end } = request.query;
        let from: string;
        let to: string;
        try {
          if (!start || !end)
            throw new ApiError('invalid_date', 'Give both a start and an end date.');
          parseDay(start);
          parseDay(end);
          if (start > end)
            throw new ApiError('invalid_date', 'The start date is after the end date.');
          [from, to] = [start, end];
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          // The product's page again, the error above the form and the dates as typed.
          return sendProductPage(ctx, request, reply, {
            q: { start_date: start ?? '', end_date: end ?? '' },
            errors: [`${err.message} Use YYYY-MM-DD dates (UTC), the start on or before the end.`],
            status: 400,
          });
        }
        // Any range: the CSV is for reconciliation, and a year or more is one query.
        const rows = feeStatsRows(await ctx.snapshots.feeStats(p.id, from, to), p.assetDecimals);
        const csv = [
          CSV_COLUMNS.join(','),
          ...rows.map((r) => CSV_COLUMNS.map((c) => r[c]).join(',')),
        ].join('\r\n');
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header(
            'content-disposition',
            `attachment; filename="${p.slug}-fee-stats-${from}-${to}.csv"`,
          )
          .header('cache-control', 'no-store')
          .send(`${csv}\r\n`);
      },
    );
  };
}
