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
import type { FastifyPluginAsync } from 'fastify';
import type { Member } from '../../db/portal-members.ts';
import type { Environment, Product } from '../../db/products.ts';
import { presentedApys, type SnapshotView } from '../../db/snapshot-reads.ts';
import { parseDay, trailingDays } from '../../http/date-range.ts';
import { ApiError } from '../../http/errors.ts';
import { feeStatsRows } from '../../http/fee-stats-view.ts';
import { toBaseUnits } from '../../money/index.ts';
import { type CompactChartData, encodeChartData } from '../chart-data.ts';
import { envParam, type PortalContext, PortalError, sendPage, sessionOf } from '../context.ts';
import { money, percent } from '../format.ts';
import { type Html, html, raw } from '../html.ts';
import { page } from '../layout.ts';

export const CHART_DAYS = [7, 30, 180, 365] as const;
const DAY_MS = 86_400_000;

const STATUS_LABEL: Record<Product['status'], string> = {
  pending_deploy: 'Deploying',
  active: 'Active',
  paused: 'Paused',
  deprecated: 'Deprecated',
};

export interface HealthBadge {
  level: 'ok' | 'warn' | 'bad' | 'neutral';
  label: string;
  detail: string;
}

/**
 * The health badge, from what the service already knows (the status follower's flags and the
 * newest snapshot), without a chain read on the page's path. Words first: the colour only repeats
 * what the label says.
 */
export function healthOf(p: Product, latest: SnapshotView | undefined, now: Date): HealthBadge {
  if (p.status === 'pending_deploy') {
    return { level: 'neutral', label: 'Not deployed yet', detail: 'The engine is being deployed.' };
  }
  if (p.upstreamHalted) {
    return {
      level: 'bad',
      label: 'Upstream halted',
      detail: 'The underlying vault is not accepting deposits; withdrawals follow its rules.',
    };
  }
  if (p.status === 'paused' || p.operatorPaused || p.chainPaused) {
    return { level: 'warn', label: 'Paused', detail: 'Deposits are off; withdrawals work.' };
  }
  if (p.status === 'deprecated') {
    return { level: 'warn', label: 'Withdrawals only', detail: 'Deprecated: hide deposits.' };
  }
  const age = latest ? (now.getTime() - Date.parse(`${latest.date}T00:00:00Z`)) / DAY_MS : 0;
  if (latest && age > 2) {
    return {
      level: 'warn',
      label: 'Figures delayed',
      detail: `The newest daily figures are of ${latest.date}.`,
    };
  }
  return { level: 'ok', label: 'Healthy', detail: 'Deposits and withdrawals work.' };
}

function badge(h: HealthBadge): Html {
  const mark = { ok: '✓', warn: '!', bad: '✕', neutral: '…' }[h.level];
  return html`<span class="badge badge-${h.level}" title="${h.detail}"><span aria-hidden="true">${mark}</span> ${h.label}</span>`;
}

/**
 * The APYs a product is shown with: the API's rule for `latest_metrics` (presentedApys), so a
 * product without a full day of its own shows the launch-day estimate from its underlying vault,
 * labelled "Estimate" in words (the API's `apy_basis: "underlying_estimate"`).
 */
function shownApys(s: SnapshotView | undefined) {
  const apys = s && presentedApys(s);
  const figure = (value: string | undefined): Html | string => {
    if (!apys || value === undefined) return '—';
    return apys.basis === 'engine'
      ? percent(value)
      : html`${percent(value)} <span class="badge badge-neutral estimate">Estimate</span>`;
  };
  return {
    net: figure(apys?.netApyForUser),
    underlying: figure(apys?.underlyingApy),
    estimated: apys?.basis === 'underlying_estimate',
  };
}

/** What an estimate is made of, in words (the same words on the list and the product page). */
const ESTIMATE_BASIS =
  'the product is new and has no full day of its own yet, so its APYs are estimated from the underlying vault: the underlying’s measured APY over its latest day, and that APY with the product’s fees applied to the gain';

function parseChartDays(raw: unknown): number {
  if (raw === undefined) return 30;
  const n = CHART_DAYS.find((d) => String(d) === raw);
  if (n === undefined) {
    throw new PortalError(400, 'No such period', 'Choose 7, 30, 180 or 365 days.');
  }
  return n;
}

/** JSON inside a <script type="application/json">: nothing in it may close the element. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

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

export function productsRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;

    /** A product of the member's partner in this environment, or 404. */
    async function ownProduct(member: Member, env: Environment, slug: string): Promise<Product> {
      const p = await ctx.products.getBySlug(slug);
      if (!p || p.partnerId !== member.partnerId || p.environment !== env) {
        throw new PortalError(
          404,
          'Product not found',
          `There is no ${env} product “${slug}” in your team. Check the environment switch.`,
        );
      }
      return p;
    }

    app.get<{ Params: { env: string } }>('/:env/products', async (request, reply) => {
      const env = envParam(request);
      const { member } = sessionOf(request);
      const list = await ctx.products.listForPartner(member.partnerId, env);
      const latest = await ctx.snapshots.latestFor(list.map((p) => p.id));
      const now = ctx.now();
      let anyEstimate = false;
      const rows = list.map((p) => {
        const s = latest.get(p.id);
        const apys = shownApys(s);
        anyEstimate ||= apys.estimated;
        return html`<tr>
  <th scope="row"><a href="${base()}/${env}/products/${p.slug}" hx-boost="false">${p.displayName}</a><br><span class="hint"><code>${p.slug}</code></span></th>
  <td>${STATUS_LABEL[p.status]}</td>
  <td class="num">${apys.net}</td>
  <td class="num">${apys.underlying}</td>
  <td class="num">${s ? money(s.engineTotalAssets, p.assetDecimals, p.assetSymbol) : '—'}</td>
  <td>${badge(healthOf(p, s, now))}</td>
</tr>`;
      });
      return sendPage(
        reply,
        page({
          title: 'Products',
          base: base(),
          csrf: reply.generateCsrf(),
          member,
          env,
          section: 'products',
          body: html`<p class="lead">Your ${env} products with their latest daily figures. APYs are over the last finished day; TVL is what the engine holds.</p>
${
  list.length === 0
    ? html`<div class="empty"><strong>No ${env} products yet</strong>We set products up with you; they appear here once provisioned.</div>`
    : html`<table>
  <caption class="visually-hidden">${env} products</caption>
  <thead><tr><th scope="col">Product</th><th scope="col">Status</th><th scope="col" class="num">Net APY</th><th scope="col" class="num">Underlying APY</th><th scope="col" class="num">TVL</th><th scope="col">Health</th></tr></thead>
  <tbody>${rows}</tbody>
</table>
${anyEstimate ? html`<p class="hint" id="estimate-note"><span class="badge badge-neutral">Estimate</span>: ${ESTIMATE_BASIS}. The API marks these <code>apy_basis: "underlying_estimate"</code>.</p>` : ''}`
}`,
        }),
      );
    });

    app.get<{ Params: { env: string; slug: string }; Querystring: { days?: string } }>(
      '/:env/products/:slug',
      async (request, reply) => {
        const env = envParam(request);
        const { member } = sessionOf(request);
        const days = parseChartDays(request.query.days);
        const p = await ownProduct(member, env, request.params.slug);
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
        const q = request.query as { start_date?: string; end_date?: string; error?: string };
        return sendPage(
          reply,
          productPage(member, env, p, latest, charts, now, reply.generateCsrf(), q),
        );
      },
    );

    app.get<{
      Params: { env: string; slug: string };
      Querystring: { start_date?: string; end_date?: string };
    }>('/:env/products/:slug/fee-stats.csv', async (request, reply) => {
      const env = envParam(request);
      const { member } = sessionOf(request);
      const p = await ownProduct(member, env, request.params.slug);
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
        throw new PortalError(
          400,
          'Those dates do not work',
          `${err.message} Use YYYY-MM-DD dates (UTC), the start on or before the end.`,
        );
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
    });

    /**
     * The charts of a window: their data, captions and summaries in words. Depends only on the
     * read model (the product, its snapshots), so it is kept in the read cache per window and
     * dropped with it at the next change.
     */
    function chartsSection(
      p: Product,
      latest: SnapshotView | undefined,
      charts: {
        data: CompactChartData;
        apy: readonly SnapshotView[];
        fees: readonly SnapshotView[];
      },
    ): Html {
      const { data, apy, fees } = charts;
      const hasData = apy.length > 0;
      const last = fees[fees.length - 1];
      const summary = <T>(values: T[], order: (x: T, y: T) => number, fmt: (v: T) => string) => {
        if (values.length === 0) return 'no figures';
        const sorted = [...values].sort(order);
        return `from ${fmt(sorted[0]!)} to ${fmt(sorted[sorted.length - 1]!)}, ${fmt(values[values.length - 1]!)} on the last day`;
      };
      const byApy = (x: string, y: string) => {
        const d = toBaseUnits(x, 6) - toBaseUnits(y, 6);
        return d < 0n ? -1 : d > 0n ? 1 : 0;
      };
      const byAmount = (x: bigint, y: bigint) => (x < y ? -1 : x > y ? 1 : 0);
      const amount = (v: bigint) => money(v, p.assetDecimals, p.assetSymbol);
      const total = (pick: (r: SnapshotView) => bigint | null) =>
        fees.reduce((sum, r) => sum + (pick(r) ?? 0n), 0n);
      return hasData
        ? html`<script type="application/json" id="chart-data">${rawJson(data)}</script>
<figure class="chart-figure">
  <figcaption id="apy-caption"><strong>Net and underlying APY</strong> <span class="key"><span class="swatch swatch-net" aria-hidden="true"></span>Net APY, daily (solid)</span> <span class="key"><span class="swatch swatch-net7" aria-hidden="true"></span>Net APY realised over 7 days (dotted)</span> <span class="key"><span class="swatch swatch-underlying" aria-hidden="true"></span>Underlying APY (dashed)</span></figcaption>
  <div class="chart" data-chart="apy" tabindex="0" role="img" aria-labelledby="apy-caption" aria-describedby="apy-summary"></div>
  <p class="hint" id="apy-summary">Net APY ${summary(
    apy.map((r) => r.netApyForUser!),
    byApy,
    percent,
  )}.${
    apy.some((r) => r.netApy7d !== null)
      ? html` Net APY realised over 7 days ${summary(
          apy.filter((r) => r.netApy7d !== null).map((r) => r.netApy7d!),
          byApy,
          percent,
        )}.`
      : ''
  } Underlying APY ${summary(
    apy.map((r) => r.underlyingApy!),
    byApy,
    percent,
  )}.</p>
</figure>
<figure class="chart-figure">
  <figcaption id="tvl-caption"><strong>TVL</strong> (${p.assetSymbol} in the engine at the end of each day)</figcaption>
  <div class="chart" data-chart="tvl" tabindex="0" role="img" aria-labelledby="tvl-caption" aria-describedby="tvl-summary"></div>
  <p class="hint" id="tvl-summary">TVL ${summary(
    apy.map((r) => r.engineTotalAssets),
    byAmount,
    amount,
  )}.</p>
</figure>
<figure class="chart-figure">
  <figcaption id="fees-caption"><strong>Fee earnings</strong> <span class="key"><span class="swatch swatch-partner" aria-hidden="true"></span>Partner per day (dark bars)</span> <span class="key"><span class="swatch swatch-service" aria-hidden="true"></span>Service per day (light bars, outlined)</span> <span class="key"><span class="swatch swatch-partner-line" aria-hidden="true"></span>Partner cumulative (solid line)</span> <span class="key"><span class="swatch swatch-service-line" aria-hidden="true"></span>Service cumulative (dashed line)</span></figcaption>
  <div class="chart" data-chart="fees" tabindex="0" role="img" aria-labelledby="fees-caption" aria-describedby="fees-summary"></div>
  <p class="hint" id="fees-summary">${
    last
      ? `Over the period you earned ${amount(total((r) => r.dailyPartnerFee))} and the service ${amount(total((r) => r.dailyServiceFee))}; since deployment ${amount(last.cumulativePartnerFeeEarned)} and ${amount(last.cumulativeServiceFeeEarned)}.`
      : 'No fee figures in this period.'
  }</p>
</figure>
<p class="hint">Point at a chart, or focus it and use the arrow keys, to read each day's exact figures.</p>`
        : latest
          ? html`<div class="empty"><strong>No charts yet</strong>The charts start with the product’s first full day of its own: APYs need two days of the engine.</div>`
          : html`<div class="empty"><strong>No daily figures yet</strong>The first figures appear the day after the engine is deployed; APYs need two days.</div>`;
    }

    function productPage(
      member: Member,
      env: Environment,
      p: Product,
      latest: SnapshotView | undefined,
      charts: { data: CompactChartData; hasData: boolean; html: Html },
      now: Date,
      csrf: string,
      q: { start_date?: string; end_date?: string },
    ) {
      const here = `${base()}/${env}/products/${p.slug}`;
      const { data, hasData, html: chartsHtml } = charts;
      const apys = shownApys(latest);
      const body = html`<p class="lead"><code>${p.slug}</code> · ${p.assetSymbol} · partner fee ${(p.partnerFeeBps / 100).toFixed(2)} %, service fee ${(p.serviceFeeBps / 100).toFixed(2)} % of the yield</p>
<dl class="figures">
  <div><dt>Status</dt><dd>${STATUS_LABEL[p.status]} ${badge(healthOf(p, latest, now))}</dd></div>
  <div><dt>Net APY</dt><dd>${apys.net}</dd></div>
  <div><dt>Net APY, last 7 days</dt><dd>${latest?.netApy7d != null ? percent(latest.netApy7d) : html`<span title="Shown once the product has 7 days of history">—</span>`}</dd></div>
  <div><dt>Underlying APY</dt><dd>${apys.underlying}</dd></div>
  <div><dt>TVL</dt><dd>${latest ? money(latest.engineTotalAssets, p.assetDecimals, p.assetSymbol) : '—'}</dd></div>
  <div><dt>Your fees earned to date</dt><dd>${latest ? money(latest.cumulativePartnerFeeEarned, p.assetDecimals, p.assetSymbol) : '—'}</dd></div>
</dl>
<p class="hint">${latest ? html`Figures of ${latest.date} (UTC), the latest daily snapshot.` : 'No daily figures yet.'}</p>
${
  apys.estimated
    ? html`<p class="notice" id="estimate-note" role="note"><strong>The APYs are an estimate</strong> (the API's <code>apy_basis: "underlying_estimate"</code>): ${ESTIMATE_BASIS} (${((p.partnerFeeBps + p.serviceFeeBps) / 100).toFixed(2)} % of the yield). The product's own APYs replace them once its first full day closes; the charts start then.</p>`
    : ''
}
<nav aria-label="Period" class="periods">
  <span>Period:</span>
  ${CHART_DAYS.map(
    (d) =>
      html`<a href="${here}?days=${d}" hx-boost="false" ${d === data.days ? html`aria-current="page"` : ''}>${d} days</a>`,
  )}
  <span class="hint">${data.from} to ${data.to}</span>
</nav>
${chartsHtml}
<section class="panel" aria-labelledby="csv-heading">
  <h2 id="csv-heading">Download fee-stats (CSV)</h2>
  <p>The daily rows of the API's <code>fee-stats</code>, for any range: one line per day, the same columns and exact figures, for reconciliation.</p>
  <form method="get" action="${here}/fee-stats.csv" class="inline" hx-boost="false">
    <div class="field"><label for="csv-start">From (UTC)</label><input type="date" id="csv-start" name="start_date" required value="${q.start_date ?? data.from}"></div>
    <div class="field"><label for="csv-end">To (UTC)</label><input type="date" id="csv-end" name="end_date" required value="${q.end_date ?? data.to}"></div>
    <div class="field"><button type="submit">Download CSV</button></div>
  </form>
</section>`;
      return page({
        title: p.displayName,
        base: base(),
        csrf,
        member,
        env,
        section: 'products',
        body,
        assets: hasData ? ['uplot.css', 'uplot.js', 'charts.js'] : [],
        // Every link here loads whole (the period switch, the CSV form): no htmx to download.
        htmx: false,
      });
    }
  };
}

const rawJson = (value: unknown): Html => raw(jsonForScript(value));
