/**
 * Dashboards over HTTP (inject): the products of an environment, a product's page whose chart data
 * equals the API's apy-history and fee-stats for the same window, and the fee-stats CSV, checked
 * against the API row by row. Every role may read them; nobody reads another partner's or the
 * other environment's products.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { type CompactChartData, decodeChartData } from '../../src/portal/chart-data.ts';
import { type Harness, portalHarness, text } from './harness.ts';
import { seedProducts, yesterday } from './products-fixture.ts';

let h: Harness;
let liveKey: string;
let testKey: string;
let n = 0;
const email = (tag: string) => `${tag}-${++n}@example.com`;

beforeAll(async () => {
  h = await portalHarness();
  await seedProducts(h.t.db, h.partner.id, [
    {
      slug: 'dash-core',
      displayName: 'USDC Core',
      environment: 'live',
      status: 'active',
      days: 400,
    },
    {
      slug: 'dash-old',
      displayName: 'USDC Old',
      environment: 'live',
      status: 'deprecated',
      days: 10,
    },
    {
      slug: 'dash-next',
      displayName: 'USDC Next',
      environment: 'live',
      status: 'pending_deploy',
      days: 0,
    },
    {
      slug: 'dash-sand',
      displayName: 'USDC Sandbox',
      environment: 'test',
      status: 'active',
      days: 20,
    },
    // Launched yesterday: one row without APYs of its own, with the launch-day estimate the
    // metrics processor stores (underlying-estimate.ts), here written directly.
    {
      slug: 'dash-launch',
      displayName: 'USDC Launch',
      environment: 'live',
      status: 'active',
      days: 1,
    },
    {
      slug: 'dash-move',
      displayName: 'USDC Move',
      environment: 'live',
      status: 'active',
      days: 10,
    },
  ]);
  await h.t.db.query(
    `UPDATE daily_snapshots SET estimated_underlying_apy = 0.052345, estimated_net_apy = 0.050251
     WHERE product_id = (SELECT id FROM products WHERE slug = 'dash-launch')`,
  );
  const other = await createPartnersRepo(h.t.db).create('Other Co');
  await seedProducts(h.t.db, other.id, [
    {
      slug: 'dash-other',
      displayName: 'Other product',
      environment: 'live',
      status: 'active',
      days: 5,
    },
  ]);
  const keys = createApiKeysRepo(h.t.db);
  liveKey = (await keys.create(h.partner.id, 'live', 'api')).key;
  testKey = (await keys.create(h.partner.id, 'test', 'api')).key;
}, 120_000);
afterAll(async () => h?.close());

async function api<T>(url: string, key = liveKey): Promise<T> {
  const res = await h.app.inject({ url, headers: { 'x-api-key': key } });
  expect(res.statusCode, url).toBe(200);
  return (res.json() as { data: T }).data;
}

/** The page's compact chart data, decoded back to the API's columns (see chart-data.ts). */
function chartData(body: string) {
  const m = /<script type="application\/json" id="chart-data">([^<]*)<\/script>/.exec(body);
  expect(m, 'chart data in the page').toBeTruthy();
  const compact = JSON.parse(m![1]!) as CompactChartData;
  // Integers, not decimal strings: APYs in millionths, amounts in base units.
  expect(compact.apy.u.every((v) => Number.isInteger(v))).toBe(true);
  expect(compact.fees.dp.every((v) => Number.isInteger(v))).toBe(true);
  return decodeChartData(compact) as unknown as {
    days: number;
    from: string;
    to: string;
    apy_history: Record<string, string[]>;
    fee_stats: Record<string, string[]>;
  };
}

type ApyRow = { date: string; underlying_apy: string; net_apy_for_user: string };
type FeeRow = Record<string, string>;

describe('products list', () => {
  it('shows the products of the environment with APYs, TVL and a health badge, and nothing else', async () => {
    const c = await h.signedIn(email('list'), 'viewer');
    const live = await c.get('/portal/live/products');
    expect(live.status).toBe(200);
    const words = text(live.body);
    const [apiCore] = (
      await api<Array<{ slug: string; latest_metrics: { net_apy_for_user: string } }>>(
        '/api/partner/products',
      )
    ).filter((p) => p.slug === 'dash-core');
    // 6-place fractions as percentages to 2 places: 0.051234 → 5.12 %.
    const net = apiCore!.latest_metrics.net_apy_for_user;
    const hundredths = Math.round(Number(net) * 10_000);
    expect(words).toContain(
      `USDC Core dash-core Active ${Math.floor(hundredths / 100)}.${String(hundredths % 100).padStart(2, '0')} %`,
    );
    expect(words).toMatch(/USDC Old dash-old Deprecated .* Withdrawals only/);
    expect(words).toMatch(/USDC Next dash-next Deploying — — — … Not deployed yet/);
    expect(words).toContain('✓ Healthy');
    expect(words).not.toContain('Sandbox');
    expect(words).not.toContain('Other product');
    const test = await c.get('/portal/test/products');
    expect(text(test.body)).toContain('USDC Sandbox');
    expect(text(test.body)).not.toContain('USDC Core');
  });

  it('shows a new product’s launch-day estimate as the API does, labelled with its basis', async () => {
    const c = await h.signedIn(email('estimate'), 'viewer');
    const [launch] = (
      await api<
        Array<{
          slug: string;
          latest_metrics: { net_apy_for_user: string; underlying_apy: string; apy_basis: string };
        }>
      >('/api/partner/products')
    ).filter((p) => p.slug === 'dash-launch');
    expect(launch!.latest_metrics).toMatchObject({
      net_apy_for_user: '0.050251',
      underlying_apy: '0.052345',
      apy_basis: 'underlying_estimate',
    });
    const list = text((await c.get('/portal/live/products')).body);
    expect(list).toMatch(
      /USDC Launch dash-launch Active 5\.03 % Estimate 5\.23 % Estimate [\d,.]+ USDC/,
    );
    expect(list).toContain('Estimate : the product is new and has no full day of its own yet');
    expect(list).toContain('apy_basis: "underlying_estimate"');
    // A product with APYs of its own carries no label.
    expect(list).toMatch(/USDC Core dash-core Active \d+\.\d\d % \d+\.\d\d % [\d,.]+ USDC/);

    const product = text((await c.get('/portal/live/products/dash-launch')).body);
    expect(product).toContain('Net APY 5.03 % Estimate');
    expect(product).toContain('Underlying APY 5.23 % Estimate');
    expect(product).toContain(
      'The APYs are an estimate (the API\'s apy_basis: "underlying_estimate" ): the product is new',
    );
    expect(product).toContain('with the product’s fees applied to the gain (4.00 % of the yield)');
    const core = text((await c.get('/portal/live/products/dash-core')).body);
    expect(core).not.toContain('Estimate');
  });

  it('says so when an environment has no products', async () => {
    const other = await createPartnersRepo(h.t.db).create('Empty Co');
    const c = await h.signedIn(email('empty'), 'owner', other);
    expect(text((await c.get('/portal/test/products')).body)).toContain('No test products yet');
  });
});

describe('product page', () => {
  it('carries chart data equal to the API’s apy-history and fee-stats of the same window', async () => {
    const c = await h.signedIn(email('charts'), 'developer');
    for (const days of [7, 30, 180]) {
      const page = await c.get(`/portal/live/products/dash-core?days=${days}`);
      expect(page.status).toBe(200);
      const data = chartData(page.body);
      expect(data.days).toBe(days);
      const apy = (await api<ApyRow[]>(`/api/partner/products/dash-core/apy-history?days=${days}`))
        .slice()
        .reverse();
      expect(apy).toHaveLength(days);
      expect(data.apy_history.date).toEqual(apy.map((r) => r.date));
      expect(data.apy_history.net_apy_for_user).toEqual(apy.map((r) => r.net_apy_for_user));
      expect(data.apy_history.underlying_apy).toEqual(apy.map((r) => r.underlying_apy));
      expect([data.from, data.to]).toEqual([apy[0]!.date, apy[apy.length - 1]!.date]);
      const fees = await api<FeeRow[]>(
        `/api/partner/products/dash-core/fee-stats?start_date=${data.from}&end_date=${data.to}`,
      );
      for (const col of Object.keys(data.fee_stats)) {
        expect(data.fee_stats[col], col).toEqual(fees.map((r) => r[col]));
      }
      // TVL: the fee-stats rows' engine_total_assets of the same days.
      expect(data.apy_history.engine_total_assets).toEqual(fees.map((r) => r.engine_total_assets));
    }
    // 365 days: beyond apy-history's longest window; the same reads over a year.
    const year = chartData((await c.get('/portal/live/products/dash-core?days=365')).body);
    expect(year.apy_history.date).toHaveLength(365);
    expect(year.to).toBe(yesterday());
    const fees = await api<FeeRow[]>(
      `/api/partner/products/dash-core/fee-stats?start_date=${year.from}&end_date=${year.to}`,
    );
    expect(year.fee_stats.cumulative_partner_fee_earned).toEqual(
      fees.map((r) => r.cumulative_partner_fee_earned),
    );
  });

  it('shows the figures in words, an empty state before any figures, and refuses other periods', async () => {
    const c = await h.signedIn(email('words'), 'viewer');
    const page = text((await c.get('/portal/live/products/dash-core')).body);
    expect(page).toMatch(/Net APY \d+\.\d\d %/);
    expect(page).toMatch(/TVL [\d,]+\.\d\d USDC/);
    expect(page).toContain('Period: 7 days 30 days 180 days 365 days');
    // The charts' text alternatives, as sentences: first day to last, compared exactly.
    expect(page).toMatch(
      /Net APY (rose|fell) from \d+\.\d\d % to \d+\.\d\d % over the last 30 days|Net APY stayed at \d+\.\d\d % over the last 30 days/,
    );
    expect(page).toMatch(
      /TVL (rose from [\d,]+\.\d\d USDC to [\d,]+\.\d\d USDC|fell from [\d,]+\.\d\d USDC to [\d,]+\.\d\d USDC|stayed at [\d,]+\.\d\d USDC) over the last 30 days/,
    );
    const empty = await c.get('/portal/live/products/dash-next');
    expect(text(empty.body)).toContain('No daily figures yet');
    expect(empty.body).not.toContain('uplot.js');
    const bad = await c.get('/portal/live/products/dash-core?days=90');
    expect(bad.status).toBe(400);
    expect(text(bad.body)).toContain('Choose 7, 30, 180 or 365 days.');
  });

  it('never shows another partner’s product, nor one of the other environment', async () => {
    const c = await h.signedIn(email('scope'), 'owner');
    for (const url of [
      '/portal/live/products/dash-other',
      '/portal/test/products/dash-core',
      '/portal/live/products/dash-sand',
      '/portal/live/products/dash-other/fee-stats.csv?start_date=2026-01-01&end_date=2026-01-02',
    ]) {
      const res = await c.get(url);
      expect(res.status, url).toBe(404);
      expect(text(res.body)).toContain('Product not found');
    }
    const anonymous = await h.client().get('/portal/live/products/dash-core');
    expect(anonymous.status).toBe(303);
    expect(anonymous.location).toBe('/portal/sign-in');
  });
});

describe('cached pages', () => {
  it('show a changed snapshot once the read model moves, as the API does', async () => {
    const c = await h.signedIn(email('moves'), 'viewer');
    const before = chartData((await c.get('/portal/live/products/dash-move?days=7')).body);
    const lastDay = before.apy_history.date!.at(-1)!;
    expect(before.apy_history.net_apy_for_user!.at(-1)).not.toBe('0.012345');
    await h.t.db.query(
      `UPDATE daily_snapshots SET net_apy_for_user = 0.012345
       WHERE product_id = (SELECT id FROM products WHERE slug = 'dash-move') AND date = $1`,
      [lastDay],
    );
    // The read cache polls the read model's version (1 s by default): within a few seconds.
    await expect
      .poll(
        async () =>
          chartData(
            (await c.get('/portal/live/products/dash-move?days=7')).body,
          ).apy_history.net_apy_for_user!.at(-1),
        { timeout: 20_000, interval: 100 },
      )
      .toBe('0.012345');
    const apy = await api<ApyRow[]>('/api/partner/products/dash-move/apy-history?days=7');
    expect(apy[0]).toMatchObject({ date: lastDay, net_apy_for_user: '0.012345' });
    // The product page loads whole and needs no htmx; the list does.
    const product = await c.get('/portal/live/products/dash-move');
    expect(product.body).not.toContain('htmx.min.js');
    expect((await c.get('/portal/live/products')).body).toContain('htmx.min.js');
  });
});

describe('fee-stats CSV', () => {
  it('downloads the API’s fee-stats rows for a range, column for column', async () => {
    const c = await h.signedIn(email('csv'), 'viewer');
    const from = new Date(Date.now() - 120 * 86_400_000).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 10);
    const res = await c.get(
      `/portal/live/products/dash-core/fee-stats.csv?start_date=${from}&end_date=${to}`,
    );
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(
      `attachment; filename="dash-core-fee-stats-${from}-${to}.csv"`,
    );
    const [header, ...lines] = res.body.trimEnd().split('\r\n');
    const fees = await api<FeeRow[]>(
      `/api/partner/products/dash-core/fee-stats?start_date=${from}&end_date=${to}`,
    );
    const columns = header!.split(',');
    expect(columns).toEqual(Object.keys(fees[0]!));
    expect(lines).toHaveLength(101);
    expect(
      lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [columns[i], v]))),
    ).toEqual(fees);
  });

  it('takes a range longer than the API’s year, and refuses bad dates in words', async () => {
    const c = await h.signedIn(email('csv2'), 'viewer');
    const from = new Date(Date.now() - 399 * 86_400_000).toISOString().slice(0, 10);
    const long = await c.get(
      `/portal/live/products/dash-core/fee-stats.csv?start_date=${from}&end_date=${yesterday()}`,
    );
    expect(long.status).toBe(200);
    expect(long.body.trimEnd().split('\r\n')).toHaveLength(1 + 399); // the first day has no figures
    for (const [q, words] of [
      ['start_date=2026-02-30&end_date=2026-03-01', 'is not a real calendar day'],
      ['start_date=2026-03-02&end_date=2026-03-01', 'The start date is after the end date.'],
      ['start_date=2026-03-01', 'Give both a start and an end date.'],
    ] as const) {
      const res = await c.get(`/portal/live/products/dash-core/fee-stats.csv?${q}`);
      expect(res.status, q).toBe(400);
      expect(text(res.body)).toContain(words);
      // On the product's page, above its form, with the dates as typed: not a bare error page.
      expect(res.body, q).toContain('class="error-summary"');
      expect(res.body, q).toContain('id="csv-heading"');
      expect(res.body, q).toMatch(
        /name="start_date" required value="2026-0\d-\d\d" aria-invalid="true"/,
      );
    }
  });

  it('serves the test environment’s products to test keys’ figures only', async () => {
    const c = await h.signedIn(email('csv3'), 'viewer');
    const res = await c.get(
      `/portal/test/products/dash-sand/fee-stats.csv?start_date=2020-01-01&end_date=${yesterday()}`,
    );
    const fees = await api<FeeRow[]>(
      `/api/partner/products/dash-sand/fee-stats?start_date=${new Date(Date.now() - 200 * 86_400_000).toISOString().slice(0, 10)}&end_date=${yesterday()}`,
      testKey,
    );
    expect(fees).toHaveLength(19);
    expect(res.body.trimEnd().split('\r\n').slice(1)).toEqual(
      fees.map((r) => Object.values(r).join(',')),
    );
  });
});
