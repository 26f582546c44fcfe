/**
 * Dashboards: the products of an environment (status, APYs, TVL, a health badge) and a product's
 * page with charts of net vs underlying APY, TVL and fee earnings over 7/30/180/365 days, plus a
 * CSV of fee-stats for any range. Every figure comes from the API's own read functions
 * (db/snapshot-reads.ts, the fee-stats formatting of api/routes/fee-stats.ts) over the same day
 * windows (api/date-range.ts), through the API's read cache (api/read-cache.ts: the same entries,
 * dropped at every change of the read model), so the dashboard and the API cannot disagree.
 *
 * The charts' data travels in the page as compact JSON (chart-data.ts: exact integers, no repeated
 * keys); static/charts.js rebuilds the API's decimal strings from it and draws them with uPlot,
 * served by the portal itself.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { trailingDays } from '../../../http/date-range.ts';
import { encodeChartData } from '../../chart-data.ts';
import { type PortalContext, sendPage, signedIn } from '../../context.ts';
import { chartsSection, productPage } from './detail-view.ts';
import { ownProduct, parseChartDays } from './shared.ts';

export function productDetailRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { env: string; slug: string }; Querystring: { days?: string } }>(
      '/:env/products/:slug',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const q = request.query as { start_date?: string; end_date?: string };
        return sendProductPage(ctx, request, reply, { q });
      },
    );
  };
}

/**
 * A product's page; the fee-stats CSV answers it too (400) when its dates do not make a range, with
 * the error above the form and the dates as typed.
 */
export async function sendProductPage(
  ctx: PortalContext,
  request: FastifyRequest,
  reply: FastifyReply,
  opts: { q: { start_date?: string; end_date?: string }; errors?: string[]; status?: number },
) {
  const { member, env } = signedIn(request);
  const days = parseChartDays((request.query as { days?: string }).days);
  const p = await ownProduct(ctx, member, env, (request.params as { slug: string }).slug);
  const now = ctx.now();
  const [latestMap, latestFinal] = await Promise.all([
    ctx.snapshots.latestFor([p.id]),
    ctx.snapshots.latestFinalDate(p.id),
  ]);
  const latest = latestMap.get(p.id);
  const { from, to } = trailingDays(days, now, latestFinal);
  const build = async () => {
    const [newestFirst, fees] = await Promise.all([
      ctx.snapshots.apyHistory(p.id, from, to),
      ctx.snapshots.feeStats(p.id, from, to),
    ]);
    // Oldest first, as charts read; a copy, as the read cache shares its arrays with the API.
    const apy = newestFirst.toReversed();
    const data = encodeChartData({
      days,
      from,
      to,
      asset: p.assetSymbol,
      decimals: p.assetDecimals,
      apy,
      fees,
    });
    return {
      data,
      hasData: apy.length > 0,
      html: chartsSection(p, latest, { data, apy, fees }),
    };
  };
  // The same window, product and snapshots give the same section: cached with the API's
  // reads, dropped at the next change of the read model.
  const charts = ctx.cache
    ? await ctx.cache.get(`portal-charts:${p.id}:${days}:${from}:${to}`, build)
    : await build();
  return sendPage(
    reply,
    productPage(
      ctx.base,
      member,
      env,
      p,
      latest,
      charts,
      now,
      reply.generateCsrf(),
      opts.q,
      opts.errors,
    ),
    opts.status ?? 200,
  );
}
