/**
 * Product dashboards in real Chromium: the products list, a product page whose drawn charts hold
 * exactly the API's apy-history and fee-stats for the same window (read back from the uPlot
 * instances, not from the page's JSON alone), tooltips by mouse and by keyboard, the period switch,
 * the CSV download checked against the API, and axe on every page. Prints the 365-day page's
 * server time and first paint (a figure, not a bound: `npm run bench:portal` measures it too).
 *
 * PORTAL_SCREENSHOTS=docs/portal writes the screenshots committed there.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import type { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy } from '../../src/webhooks/address-policy.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { chromiumMissing, launchChromium, seriousA11yViolations } from './browser.ts';
import { seedProducts } from './products-fixture.ts';

const missing = chromiumMissing();
const shots = process.env.PORTAL_SCREENSHOTS;

describe.skipIf(missing)('product dashboards in Chromium', { timeout: 120_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let browser: Browser;
  let page: Page;
  let origin: string;
  let portal: string;
  let key: string;
  const outbox = mkdtempSync(path.join(tmpdir(), 'pys-dash-outbox-'));
  const downloads = mkdtempSync(path.join(tmpdir(), 'pys-dash-downloads-'));

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    let port = 0;
    app = await buildTestApp({
      db: t.db,
      portal: {
        mailer: createOutboxMailer(outbox, 'Portal <portal@test>'),
        publicUrl: () => `http://localhost:${port}/portal`,
        idleMs: 60 * 60_000,
        addresses: createAddressPolicy(),
      },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    origin = `http://127.0.0.1:${port}`;
    portal = `http://localhost:${port}/portal`;
    const partner = await createPartnersRepo(t.db).create('Acme Wallet');
    await seedProducts(t.db, partner.id, [
      {
        slug: 'usdc-core',
        displayName: 'USDC Core',
        environment: 'live',
        status: 'active',
        days: 366,
      },
      {
        slug: 'usdc-plus',
        displayName: 'USDC Plus',
        environment: 'live',
        status: 'paused',
        days: 120,
        startTvl: 420_000,
      },
      {
        slug: 'usdc-legacy',
        displayName: 'USDC Legacy',
        environment: 'live',
        status: 'deprecated',
        days: 60,
        startTvl: 80_000,
      },
      {
        slug: 'usdc-next',
        displayName: 'USDC Next',
        environment: 'live',
        status: 'pending_deploy',
        days: 0,
      },
      // Launched yesterday: no APY of its own yet, the launch-day estimate instead.
      {
        slug: 'usdc-launch',
        displayName: 'USDC Launch',
        environment: 'live',
        status: 'active',
        days: 1,
      },
    ]);
    await t.db.query(
      `UPDATE daily_snapshots SET estimated_underlying_apy = 0.052345, estimated_net_apy = 0.050251
       WHERE product_id = (SELECT id FROM products WHERE slug = 'usdc-launch')`,
    );
    key = (await createApiKeysRepo(t.db).create(partner.id, 'live', 'dash')).key;
    const member = await inviteMember(t.db, {
      partnerId: partner.id,
      email: 'ana@acme.example',
      role: 'viewer',
    });
    browser = await launchChromium();
    const context = await browser.newContext({
      viewport: { width: 1200, height: 800 },
      acceptDownloads: true,
    });
    page = await context.newPage();
    await page.goto(await issueSignInUrl(t.db, portal, member.id));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    if (shots) mkdirSync(shots, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await t?.drop();
    rmSync(outbox, { recursive: true, force: true });
    rmSync(downloads, { recursive: true, force: true });
  });

  /**
   * Polls an expression through the DevTools protocol, which the page's CSP does not govern
   * (waitForFunction's in-page polling evaluates strings, which the CSP forbids).
   */
  async function until(expression: string) {
    await expect
      .poll(() => page.evaluate(expression), { timeout: 20_000, interval: 25 })
      .toBe(true);
  }

  async function check(name: string) {
    expect(await seriousA11yViolations(page), `${name}: accessibility`).toEqual([]);
    if (shots) await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  }

  async function api<T>(url: string): Promise<T> {
    const res = await fetch(`${origin}${url}`, { headers: { 'x-api-key': key } });
    expect(res.status, url).toBe(200);
    return ((await res.json()) as { data: T }).data;
  }

  /** What the uPlot instances hold: x as dates, each series as plotted numbers. */
  async function plotted(): Promise<Record<string, { x: string[]; series: number[][] }>> {
    return page.evaluate(`(() => {
      const out = {};
      const els = [...document.querySelectorAll('[data-chart]')];
      window.portalCharts.plots.forEach((u, i) => {
        out[els[i].dataset.chart] = {
          x: u.data[0].map((s) => new Date(s * 1000).toISOString().slice(0, 10)),
          series: u.data.slice(1),
        };
      });
      return out;
    })()`);
  }

  it('lists the products with their health, and draws a product’s charts from the API’s figures', async () => {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Products' })
      .click();
    await page.getByRole('heading', { name: 'Products', level: 1 }).waitFor();
    await page.getByRole('row', { name: /USDC Plus .* Paused/ }).waitFor();
    await page.getByRole('row', { name: /USDC Legacy .* Withdrawals only/ }).waitFor();
    await page.getByRole('row', { name: /USDC Next .* Not deployed yet/ }).waitFor();
    await check('products');

    await page.getByRole('link', { name: 'USDC Core' }).click();
    await page.getByRole('heading', { name: 'USDC Core', level: 1 }).waitFor();
    await until('window.portalCharts && window.portalCharts.plots.length === 3');
    // The default period is 30 days; switch to 180 and compare every series with the API.
    await page.getByRole('link', { name: '180 days' }).click();
    await page.waitForURL(/days=180/);
    await until('window.portalCharts && window.portalCharts.data.days === 180');
    const data = (await page.evaluate('window.portalCharts.data')) as {
      from: string;
      to: string;
    };
    const apy = (
      await api<
        Array<{
          date: string;
          underlying_apy: string;
          net_apy_for_user: string;
          net_apy_7d: string | null;
        }>
      >('/api/partner/products/usdc-core/apy-history?days=180')
    ).reverse();
    const fees = await api<Array<Record<string, string>>>(
      `/api/partner/products/usdc-core/fee-stats?start_date=${data.from}&end_date=${data.to}`,
    );
    expect(apy).toHaveLength(180);
    expect([data.from, data.to]).toEqual([apy[0]!.date, apy[179]!.date]);
    const charts = await plotted();
    const nums = (rows: Array<Record<string, string | null>>, col: string) =>
      rows.map((r) => Number(r[col]));
    expect(charts.apy!.x).toEqual(apy.map((r) => r.date));
    expect(charts.apy!.series).toEqual([
      nums(apy, 'net_apy_for_user'),
      apy.map((r) => (r.net_apy_7d === null ? null : Number(r.net_apy_7d))),
      nums(apy, 'underlying_apy'),
    ]);
    // The 7-day figure beside the daily one, once the window has data.
    expect(apy.filter((r) => r.net_apy_7d !== null).length).toBeGreaterThan(170);
    expect(charts.tvl!.x).toEqual(fees.map((r) => r.date));
    expect(charts.tvl!.series).toEqual([nums(fees, 'engine_total_assets')]);
    expect(charts.fees!.x).toEqual(fees.map((r) => r.date));
    expect(charts.fees!.series).toEqual([
      nums(fees, 'daily_partner_fee_earned'),
      nums(fees, 'daily_service_fee_earned'),
      nums(fees, 'cumulative_partner_fee_earned'),
      nums(fees, 'cumulative_service_fee_earned'),
    ]);

    // Tooltip by mouse: the exact strings of the day under the cursor.
    const fee = page.locator('[data-chart="fees"]');
    const over = fee.locator('.u-over');
    const box = (await over.boundingBox())!;
    await over.hover({ position: { x: box.width - 2, y: box.height / 2 } }); // scrolls to it
    const last = fees[fees.length - 1]!;
    const tip = page.locator('.chart-tip').nth(2);
    await expect
      .poll(() => tip.textContent())
      .toBe(
        `${last.date}Partner fee, day: ${last.daily_partner_fee_earned} USDC` +
          `Service fee, day: ${last.daily_service_fee_earned} USDC` +
          `Partner fee, cumulative: ${last.cumulative_partner_fee_earned} USDC` +
          `Service fee, cumulative: ${last.cumulative_service_fee_earned} USDC`,
      );
    await check('product');
    await page.mouse.move(0, 0);

    // Tooltip by keyboard: focus the APY chart, step back a day.
    await page.locator('[data-chart="apy"]').focus();
    await page.keyboard.press('ArrowLeft');
    const day = apy[178]!;
    await expect
      .poll(() => page.locator('.chart-tip').first().textContent())
      .toBe(
        `${day.date}Net APY: ${(Number(day.net_apy_for_user) * 100).toFixed(2)} %` +
          `Net APY, realised over 7 days: ${(Number(day.net_apy_7d) * 100).toFixed(2)} %` +
          `Underlying APY: ${(Number(day.underlying_apy) * 100).toFixed(2)} %`,
      );
  });

  it('labels a new product’s launch-day APYs as an estimate, with their basis, as the API does', async () => {
    const [launch] = (
      await api<Array<{ slug: string; latest_metrics: Record<string, string> }>>(
        '/api/partner/products',
      )
    ).filter((p) => p.slug === 'usdc-launch');
    expect(launch!.latest_metrics.apy_basis).toBe('underlying_estimate');
    const pct = (v: string) => `${(Number(v) * 100).toFixed(2)} %`;
    await page.goto(`${portal}/live/products`);
    const row = page.getByRole('row', { name: /USDC Launch/ });
    await row
      .getByRole('cell', { name: `${pct(launch!.latest_metrics.net_apy_for_user!)} Estimate` })
      .waitFor();
    await row
      .getByRole('cell', { name: `${pct(launch!.latest_metrics.underlying_apy!)} Estimate` })
      .waitFor();
    await page.getByText('its APYs are estimated from the underlying vault').waitFor();
    expect(
      await page
        .getByRole('row', { name: /USDC Core/ })
        .getByText('Estimate')
        .count(),
    ).toBe(0);
    await check('products');
    await page.getByRole('link', { name: 'USDC Launch' }).click();
    await page.getByRole('heading', { name: 'USDC Launch', level: 1 }).waitFor();
    await page.getByRole('note').getByText('The APYs are an estimate').waitFor();
    await page.getByText('No charts yet').waitFor();
    await check('product-estimate');
  });

  it('downloads the fee-stats CSV of a chosen range, equal to the API', async () => {
    await page.goto(`${portal}/live/products/usdc-core?days=365`);
    await until('window.portalCharts && window.portalCharts.plots.length === 3');
    await check('product-365');
    const from = new Date(Date.now() - 90 * 86_400_000).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('From (UTC)').fill(from);
    await page.getByLabel('To (UTC)').fill(to);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`usdc-core-fee-stats-${from}-${to}.csv`);
    const file = path.join(downloads, 'fees.csv');
    await download.saveAs(file);
    const [header, ...lines] = readFileSync(file, 'utf8').trimEnd().split('\r\n');
    const fees = await api<Array<Record<string, string>>>(
      `/api/partner/products/usdc-core/fee-stats?start_date=${from}&end_date=${to}`,
    );
    expect(header).toBe(Object.keys(fees[0]!).join(','));
    expect(lines).toEqual(fees.map((r) => Object.values(r).join(',')));
    expect(lines).toHaveLength(88);

    // A wrong range is refused in words.
    await page.getByLabel('From (UTC)').fill(to);
    await page.getByLabel('To (UTC)').fill(from);
    await page.getByRole('button', { name: 'Download CSV' }).click();
    await page.getByText('The start date is after the end date.').waitFor();
    await check('product-csv-error');
  });

  it('prints the 365-day product page’s server time and first paint', async () => {
    const runs: Array<{ server: number; paint: number; charts: number }> = [];
    for (let i = 0; i < 5; i++) {
      await page.goto(`${portal}/live/products/usdc-core?days=365`);
      await until('window.portalCharts && window.portalCharts.plots.length === 3');
      await until("performance.getEntriesByName('first-contentful-paint').length > 0");
      runs.push(
        (await page.evaluate(`(() => {
          const nav = performance.getEntriesByType('navigation')[0];
          const paint = performance.getEntriesByName('first-contentful-paint')[0];
          return {
            server: nav.responseStart - nav.requestStart,
            paint: paint ? paint.startTime : NaN,
            charts: window.portalCharts.drawnAt,
          };
        })()`)) as { server: number; paint: number; charts: number },
      );
    }
    const median = (k: 'server' | 'paint' | 'charts') =>
      runs
        .map((r) => r[k])
        .sort((a, b) => a - b)[2]!
        .toFixed(0);
    process.stdout.write(
      `product page, 365 days, Chromium (median of 5): server ${median('server')} ms, first contentful paint ${median('paint')} ms, charts drawn ${median('charts')} ms after navigation start\n`,
    );
    expect(runs.every((r) => r.paint > 0 && r.charts > 0)).toBe(true);
  });
});
