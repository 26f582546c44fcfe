/**
 * The widget's own words and layout in real Chromium, without a chain: the service on PGlite
 * serves the embed page, and a stub wallet (window.ethereum answering the position's three reads
 * from fixed figures) stands in for the chain where a position is needed. The deposit and
 * withdraw flows against a real chain are the e2e suite's (e2e.test.ts).
 *
 * - The net APY and its basis: measured on the engine's day, the launch-day estimate from the
 *   underlying vault (the API's apy_basis: "underlying_estimate"), none yet.
 * - No wallet: opened in a tab of its own it says none was found in this browser; in a frame it
 *   offers a new tab.
 * - The position at 360 and 320 px: no number or unit is broken across lines.
 * - The product card from 320 to 480 px: no percentage (the APYs, the 7-day figure, the fees) is
 *   broken between its number and its % sign.
 * - No failed request: the page alone and framed, its error page and the host example page load
 *   without a 4xx or a console error. The page alone asked for /favicon.ico (a 404) until it named
 *   its icon inline; the error and host example pages ask for none (their CSP allows no image).
 *
 * Screenshots go to a temporary directory, or to EMBED_WIDGET_SHOTS when set.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedSettingsRepo } from '../../src/db/embed-settings.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';
import { address, buildTestApp, deployed, newProduct } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { insertSnapshots } from '../helpers/snapshots.ts';
import { chromiumMissing, launchChromium, seriousA11yViolations } from '../portal/browser.ts';
import { builtEmbedAssets } from './build.ts';

const SHOTS = process.env.EMBED_WIDGET_SHOTS ?? mkdtempSync(path.join(tmpdir(), 'pys-widget-'));
const ACCOUNT = address(0xa11ce);

const missing = chromiumMissing();

describe.skipIf(missing)('the embed widget in Chromium', { timeout: 120_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildTestApp>>;
  let browser: Browser;
  let base: string;
  let embedId: string;
  let hostPage: Server;
  let hostUrl: string;
  const products: Record<string, Product> = {};
  /** Every request the service answered with 4xx or 5xx, as `status path`. */
  const refused: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await freshDatabase('pglite');
    const partner = await createPartnersRepo(t.db).create('Acme Wallet');
    const repo = createProductsRepo(t.db);
    for (const [i, slug] of ['measured', 'launch', 'new'].entries()) {
      products[slug] = await repo.create(
        newProduct({
          partnerId: partner.id,
          slug,
          displayName: `TUSD ${slug}`,
          assetSymbol: 'TUSD',
          deployed: deployed(address(0xe0 + i), { shareDecimals: 12 }),
        }),
      );
    }
    await insertSnapshots(t.db, products.measured!.id, [
      { date: '2026-11-26', totalAssets: 1_000_000_000n, underlyingApy: null, netApy: null },
      {
        date: '2026-11-27',
        totalAssets: 1_234_567_891_234n,
        underlyingApy: '0.071234',
        netApy: '0.061234',
        netApy7d: '0.061634',
      },
    ]);
    // Launched today: no APY of its own, the launch-day estimate the metrics processor stores.
    await insertSnapshots(t.db, products.launch!.id, [
      { date: '2026-11-28', totalAssets: 25_000_000n, underlyingApy: null, netApy: null },
    ]);
    await t.db.query(
      `UPDATE daily_snapshots SET estimated_underlying_apy = 0.043614, estimated_net_apy = 0.041434
       WHERE product_id = $1`,
      [products.launch!.id],
    );
    hostPage = createServer((req, res) => {
      const src = new URL(req.url ?? '/', 'http://x').searchParams.get('src') ?? '';
      res.setHeader('content-type', 'text/html');
      res.end(
        `<!doctype html><title>Host</title><iframe src="${src.replace(/"/g, '')}" width="320" height="700"></iframe>`,
      );
    });
    await new Promise<void>((r) => hostPage.listen(0, '127.0.0.1', r));
    hostUrl = `http://localhost:${(hostPage.address() as { port: number }).port}`;
    const settings = createEmbedSettingsRepo(t.db);
    embedId = (await settings.get(partner.id, 'live'))!.embedId;
    await settings.setOrigins(partner.id, 'live', [hostUrl]);
    app = await buildTestApp({
      db: t.db,
      embed: { assets: builtEmbedAssets(), ratePerMinute: 600 },
    });
    app.addHook('onResponse', async (request, reply) => {
      if (reply.statusCode >= 400) refused.push(`${reply.statusCode} ${request.url}`);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await t?.drop();
    await new Promise((r) => (hostPage ? hostPage.close(r) : r(undefined)));
  });

  const embedUrl = (slug: string) => `${base}/embed/${embedId}/${slug}`;

  async function open(slug: string, width: number, wallet?: StubWallet): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    if (wallet) await page.addInitScript(stubWallet, wallet);
    await page.goto(embedUrl(slug));
    await page.locator('.product h1').waitFor();
    return page;
  }

  it('the net APY names its basis: measured on the engine, a launch-day estimate, none yet', async () => {
    const measured = await open('measured', 360);
    expect(await measured.getByTestId('net-apy').textContent()).toBe('6.12 %');
    expect(await measured.getByTestId('net-apy-basis').textContent()).toBe(
      'After fees, from the share price change of 2026-11-27 (UTC), annualised. Not a guarantee.',
    );
    await measured.context().close();

    const launch = await open('launch', 360);
    expect(await launch.getByTestId('net-apy').textContent()).toBe('4.14 % Estimate');
    const basis = (await launch.getByTestId('net-apy-basis').textContent())!;
    expect(basis).toMatch(/^Estimated from the underlying vault; no full day yet/);
    expect(basis).not.toContain('share price change');
    expect(await seriousA11yViolations(launch)).toEqual([]);
    await launch.screenshot({ path: path.join(SHOTS, 'estimate-360.png'), fullPage: true });
    await launch.context().close();

    const none = await open('new', 360);
    expect(await none.getByTestId('net-apy').textContent()).toBe('—');
    expect(await none.getByTestId('net-apy-basis').textContent()).toBe(
      'Measured after the first full day.',
    );
    await none.context().close();
  });

  it('without a wallet: in a tab of its own, "no wallet in this browser"; in a frame, a new tab', async () => {
    const tab = await open('measured', 360);
    await tab.getByText('No wallet was found in this browser.').waitFor();
    await tab.getByText('Install or enable a wallet extension, then reload this page.').waitFor();
    expect(await tab.getByText(/inside this frame/).count()).toBe(0);
    expect(await tab.getByRole('link', { name: 'Open in a new tab' }).count()).toBe(0);
    expect(await seriousA11yViolations(tab)).toEqual([]);
    await tab.screenshot({ path: path.join(SHOTS, 'no-wallet-tab-360.png'), fullPage: true });

    // The same embed framed by an allowed host page on another loopback origin.
    await tab.goto(`${hostUrl}/?src=${encodeURIComponent(embedUrl('measured'))}`);
    const frame = tab.frameLocator('iframe');
    await frame.getByText('No wallet is available inside this frame.').waitFor();
    expect(
      await frame.getByRole('link', { name: 'Open in a new tab' }).getAttribute('target'),
    ).toBe('_blank');
    expect(await frame.getByText('No wallet was found in this browser.').count()).toBe(0);
    await tab.context().close();
  });

  it('the product card from 320 to 480 px: no percentage is broken between number and %', async () => {
    const page = await open('measured', 480);
    expect(await page.getByText('Over the last 7 days: 6.16 %').count()).toBe(1);
    // Every "12.34 %" in the card's text, as a range: the texts of those whose boxes sit on more
    // than one line.
    const brokenPercentages = `(() => {
      const card = document.querySelector('.product');
      const walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
      const broken = [];
      let count = 0;
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.data.matchAll(/-?[0-9][0-9,.]*\\s%/g)) {
          count++;
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (lines.size !== 1) broken.push(m[0]);
        }
      }
      return { count, broken };
    })()`;
    const found: string[] = [];
    for (let width = 480; width >= 320; width -= 4) {
      await page.setViewportSize({ width, height: 900 });
      const { count, broken } = (await page.evaluate(brokenPercentages)) as {
        count: number;
        broken: string[];
      };
      // 6.12 %, 6.16 % and the three fees: all found at every width.
      expect(count).toBe(5);
      found.push(...broken.map((b) => `${b} at ${width} px`));
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
        width,
      );
    }
    expect(found).toEqual([]);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('loads with no failed request: alone, framed, its error page and the host example', async () => {
    /**
     * Loads `url` in a browser of its own (Chromium remembers a missing icon for the session and
     * asks no more), waits for the network to be quiet (the browser's icon request included) and
     * for `ready`; what failed in the browser and what the service refused (4xx, 5xx).
     */
    const load = async (url: string, ready: (page: Page) => Promise<void>) => {
      const fresh = await launchChromium();
      try {
        const page = await (
          await fresh.newContext({ viewport: { width: 360, height: 900 } })
        ).newPage();
        const failures: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error') failures.push(`console: ${m.text()} ${m.location().url}`);
        });
        page.on('requestfailed', (r) =>
          failures.push(`failed: ${r.url()} ${r.failure()?.errorText}`),
        );
        page.on('response', (r) => {
          if (r.status() >= 400) failures.push(`${r.status()}: ${r.url()}`);
        });
        refused.length = 0;
        await page.goto(url, { waitUntil: 'networkidle' });
        await ready(page);
        return { failures, refused: [...refused] };
      } finally {
        await fresh.close();
      }
    };
    const alone = async (page: Page) => {
      await page.locator('.product h1').waitFor();
    };
    const framedApp = async (page: Page) => {
      await page.frameLocator('iframe').locator('.product h1').waitFor();
    };

    // Alone in a tab (the "open in a new tab" fallback), then framed by an allowed host.
    expect(await load(embedUrl('measured'), alone)).toEqual({ failures: [], refused: [] });
    const framed = `${hostUrl}/?src=${encodeURIComponent(embedUrl('measured'))}`;
    expect(await load(framed, framedApp)).toEqual({ failures: [], refused: [] });

    // The error page: its own 404 is the answer, and nothing else fails.
    const unknown = `/embed/${embedId}/no-such-product`;
    expect(
      await load(`${base}${unknown}`, async (page) => {
        await page.getByText(/This deposit widget is not available/).waitFor();
      }),
    ).toEqual({
      failures: [
        `404: ${base}${unknown}`,
        `console: Failed to load resource: the server responded with a status of 404 (Not Found) ${base}${unknown}`,
      ],
      refused: [`404 ${unknown}`],
    });

    // The demo's host example, opened on the service's other loopback name (which it frames from).
    const settings = createEmbedSettingsRepo(t.db);
    const partnerId = products.measured!.partnerId;
    const other = base.replace('127.0.0.1', 'localhost');
    await settings.setOrigins(partnerId, 'live', [hostUrl, other]);
    try {
      // The embed reads its origins through the read cache, which sees the change at its next
      // poll: until then the page would still refuse to be framed by the other name (a loaded
      // machine made the browser ask first, and the frame stayed empty until the timeout).
      const embedPage = `${base}/embed/${embedId}/measured`;
      for (let i = 0; i < 100; i++) {
        const csp = (await fetch(embedPage)).headers.get('content-security-policy') ?? '';
        if (/frame-ancestors [^;]*/.exec(csp)?.[0].includes(other)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await load(`${other}/embed/host-example/${embedId}/measured`, framedApp)).toEqual({
        failures: [],
        refused: [],
      });
    } finally {
      await settings.setOrigins(partnerId, 'live', [hostUrl]);
    }
  });

  for (const width of [360, 320]) {
    it(`the position at ${width} px: numbers and units are never broken across lines`, async () => {
      const figures: StubWallet = {
        account: ACCOUNT,
        chainId: 31337,
        engine: products.measured!.engineAddress!,
        // 24.294723504722 shares (12 decimals), worth 24.999999 TUSD; 1,234,975.000001 in the wallet.
        shares: '24294723504722',
        assets: '24999999',
        wallet: '1234975000001',
      };
      const page = await open('measured', width, figures);
      await page.getByRole('button', { name: 'Connect wallet' }).click();
      const position = page.getByRole('region', { name: 'Your position' });
      await position.waitFor();
      expect(await page.getByTestId('position-assets').textContent()).toBe('24.999999 TUSD');
      const shares = page.getByTestId('position-shares');
      expect(await shares.textContent()).toBe('24.294723');
      expect(await shares.getAttribute('title')).toBe('24.294723504722 shares');
      expect(await position.textContent()).toContain('1,234,975.000001 TUSD');
      // Every number and unit sits on one line inside the card; nothing is wider than the page.
      const broken = (await page.evaluate(`(() => {
        const card = document.querySelector('.position').getBoundingClientRect();
        return [...document.querySelectorAll('.position .nowrap')]
          .filter((el) => {
            // One line: every box of the element on the same line.
            const lines = new Set([...el.getClientRects()].map((r) => Math.round(r.top)));
            const r = el.getBoundingClientRect();
            return lines.size !== 1 || r.left < card.left || r.right > card.right;
          })
          .map((el) => el.textContent);
      })()`)) as string[];
      expect(broken).toEqual([]);
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
        width,
      );
      expect(await seriousA11yViolations(page)).toEqual([]);
      await position.screenshot({ path: path.join(SHOTS, `position-${width}.png`) });
      await page.screenshot({ path: path.join(SHOTS, `connected-${width}.png`), fullPage: true });
      await page.context().close();
    });
  }
});

interface StubWallet {
  account: string;
  chainId: number;
  engine: string;
  /** Base units, decimal strings. */
  shares: string;
  assets: string;
  wallet: string;
}

/**
 * Runs in the page: window.ethereum with an account on `chainId` whose reads answer the position's
 * figures (balanceOf on the engine and the asset, convertToAssets); anything else is refused.
 */
function stubWallet(w: StubWallet) {
  const word = (v: string) => `0x${BigInt(v).toString(16).padStart(64, '0')}`;
  (globalThis as unknown as { ethereum: unknown }).ethereum = {
    on() {},
    removeListener() {},
    async request({ method, params }: { method: string; params?: unknown[] }) {
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [w.account];
      if (method === 'eth_chainId') return `0x${w.chainId.toString(16)}`;
      if (method === 'eth_call') {
        const { to, data } = (params as [{ to: string; data: string }])[0];
        if (data.startsWith('0x70a08231')) {
          return word(to.toLowerCase() === w.engine.toLowerCase() ? w.shares : w.wallet);
        }
        if (data.startsWith('0x07a2d13a')) return word(w.assets);
      }
      throw Object.assign(new Error(`${method} is not supported`), { code: 4200 });
    },
  };
}
