import type { Member } from '../../../db/portal-members.ts';
import type { Environment, Product } from '../../../db/products.ts';
import type { SnapshotView } from '../../../db/snapshot-reads.ts';
import { toBaseUnits } from '../../../money/index.ts';
import { type CompactChartData, trendSentence } from '../../chart-data.ts';
import { money, percent } from '../../format.ts';
import { type Html, html } from '../../html.ts';
import { page } from '../../layout.ts';
import {
  badge,
  CHART_DAYS,
  ESTIMATE_BASIS,
  healthOf,
  rawJson,
  STATUS_LABEL,
  shownApys,
} from './shared.ts';

/**
 * The charts of a window: their data, captions and summaries in words. Depends only on the
 * read model (the product, its snapshots), so it is kept in the read cache per window and
 * dropped with it at the next change.
 */
export function chartsSection(
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
  const amount = (v: bigint) => money(v, p.assetDecimals, p.assetSymbol);
  const apyDates = apy.map((r) => r.date);
  const apyTrend = (label: string, pick: (r: SnapshotView) => string | null) => {
    const rows = apy.filter((r) => pick(r) !== null);
    return trendSentence({
      label,
      dates: rows.map((r) => r.date),
      values: rows.map((r) => pick(r)!),
      exact: (v) => toBaseUnits(v, 6),
      format: percent,
    });
  };
  const total = (pick: (r: SnapshotView) => bigint | null) =>
    fees.reduce((sum, r) => sum + (pick(r) ?? 0n), 0n);
  return hasData
    ? html`<script type="application/json" id="chart-data">${rawJson(data)}</script>
<figure class="chart-figure">
  <figcaption id="apy-caption"><strong>Net and underlying APY</strong> <span class="key"><span class="swatch swatch-net" aria-hidden="true"></span>Net APY, daily (solid)</span> <span class="key"><span class="swatch swatch-net7" aria-hidden="true"></span>Net APY realised over 7 days (dotted)</span> <span class="key"><span class="swatch swatch-underlying" aria-hidden="true"></span>Underlying APY (dashed)</span></figcaption>
  <div class="chart" data-chart="apy" tabindex="0" role="img" aria-labelledby="apy-caption" aria-describedby="apy-summary"></div>
  <p class="hint" id="apy-summary">${apyTrend('Net APY', (r) => r.netApyForUser)}${
    apy.some((r) => r.netApy7d !== null)
      ? ` ${apyTrend('Net APY realised over 7 days', (r) => r.netApy7d)}`
      : ''
  } ${apyTrend('Underlying APY', (r) => r.underlyingApy)}</p>
</figure>
<figure class="chart-figure">
  <figcaption id="tvl-caption"><strong>TVL</strong> (${p.assetSymbol} in the engine at the end of each day)</figcaption>
  <div class="chart" data-chart="tvl" tabindex="0" role="img" aria-labelledby="tvl-caption" aria-describedby="tvl-summary"></div>
  <p class="hint" id="tvl-summary">${trendSentence({
    label: 'TVL',
    dates: apyDates,
    values: apy.map((r) => r.engineTotalAssets),
    exact: (v) => v,
    format: amount,
  })}</p>
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

export function productPage(
  base: () => string,
  member: Member,
  env: Environment,
  p: Product,
  latest: SnapshotView | undefined,
  charts: { data: CompactChartData; hasData: boolean; html: Html },
  now: Date,
  csrf: string,
  q: { start_date?: string; end_date?: string },
  errors?: string[],
) {
  const invalid = errors?.length ? html` aria-invalid="true"` : '';
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
<div class="field"><label for="csv-start">From (UTC)</label><input type="date" id="csv-start" name="start_date" required value="${q.start_date ?? data.from}"${invalid}></div>
<div class="field"><label for="csv-end">To (UTC)</label><input type="date" id="csv-end" name="end_date" required value="${q.end_date ?? data.to}"${invalid}></div>
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
    errors,
    body,
    assets: hasData ? ['uplot.css', 'uplot.js', 'charts.js'] : [],
    // Every link here loads whole (the period switch, the CSV form): no htmx to download.
    htmx: false,
  });
}
