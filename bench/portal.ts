/**
 * `npm run bench:portal`: the portal's pages under load, beside a bare Fastify route, in one run.
 *
 * 1. Starts the api app with the portal in its own process (bench/portal-server.ts: PGlite, a
 *    partner with 20 members, keys, audit rows, products with a year of snapshots) and a bare
 *    Fastify server (bench/bare-server.ts) in another.
 * 2. Signs the 20 members in over HTTP, each by its one-time link (confirmation page, then the
 *    Continue form with its CSRF token), as browsers do.
 * 3. Drives each page with autocannon: 20 connections (one per signed-in member, each request
 *    carrying one member's cookies), a warm-up, then BENCH_SECONDS (default 10) seconds.
 * 4. Weighs each page as a browser loads it the first time: the HTML plus every stylesheet and
 *    script it references, as sent with `Accept-Encoding: gzip`; and on a later visit: the HTML
 *    alone, as the static files' URLs carry their content's hash and are cached for a year.
 * Prints req/s, p50, p99 per page and the bare route's, and the page weights, with the machine's
 * load average before and after (a shared machine's neighbours show in the figures). It measures;
 * it fails only when a page answers something other than 200.
 *
 * BENCH_PAGES (comma-separated, case-insensitive parts of page names, e.g. `webhook,inbound,keys`)
 * measures only those pages, so a before/after comparison can run back to back while the
 * machine's load is about the same; the Chromium render runs only when the 365-day page is chosen.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const PAGE_FILTER = (process.env.BENCH_PAGES ?? '')
  .split(',')
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);
const chosenPage = (name: string) =>
  PAGE_FILTER.length === 0 || PAGE_FILTER.some((part) => name.toLowerCase().includes(part));
const USERS = 20;

function start(
  script: string,
  ready: RegExp,
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], {
    env: { ...process.env, BENCH_MEMBERS: String(USERS), ...env },
    stdio: 'pipe',
  });
  let out = '';
  child.stderr?.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out: ${out.slice(-2000)}`)), 120_000);
    child.stdout?.on('data', (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m });
      }
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${out.slice(-2000)}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** A raw GET: status, headers and the bytes as they travelled (still compressed). */
function get(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      })
      .on('error', reject);
  });
}

const cookiesOf = (headers: Headers) =>
  headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .filter((c) => !c.endsWith('='));

/** Signs a member in by link, as a browser does; returns their Cookie header. */
async function signIn(link: string): Promise<string> {
  const confirm = await fetch(link);
  const jar = cookiesOf(confirm.headers);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await confirm.text())?.[1];
  const token = new URL(link).searchParams.get('token')!;
  const res = await fetch(new URL('sign-in/link', `${link.split('/sign-in/')[0]}/`), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.join('; ') },
    body: new URLSearchParams({ _csrf: csrf ?? '', token }),
  });
  const session = cookiesOf(res.headers).find((c) => c.startsWith('portal_session='));
  if (res.status !== 303 || !session) throw new Error(`sign-in failed: ${res.status}`);
  return [...jar.filter((c) => !c.startsWith('portal_session=')), session].join('; ');
}

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(name: string, url: string, cookies: string[]): Promise<Result> {
  let i = 0;
  const requests = [
    {
      setupRequest: (req: { headers: Record<string, string> }) => {
        if (cookies.length)
          req.headers = { ...req.headers, cookie: cookies[i++ % cookies.length]! };
        return req;
      },
    },
  ];
  const fire = (limit: { duration: number } | { amount: number }) =>
    autocannon({ url, connections: USERS, requests, ...limit } as autocannon.Options);
  await fire({ amount: 2_000 });
  const r = await fire({ duration: DURATION_S });
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/** The page and each stylesheet and script it references, as sent gzip-encoded. */
async function weigh(url: string, cookie: string) {
  const page = await get(url, { cookie, 'accept-encoding': 'gzip' });
  if (page.status !== 200) throw new Error(`${url}: ${page.status}`);
  const { gunzipSync } = await import('node:zlib');
  const text = (
    page.headers['content-encoding'] === 'gzip' ? gunzipSync(page.body) : page.body
  ).toString();
  const assets = [
    ...text.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="stylesheet"[^>]*\shref)="([^"]+)"/g),
  ].map((m) => m[1]!);
  let assetBytes = 0;
  // What a later visit loads again: files a browser may not keep (no long-lived cache-control).
  let uncached = 0;
  for (const a of new Set(assets)) {
    const res = await get(new URL(a, url).toString(), { 'accept-encoding': 'gzip' });
    assetBytes += res.body.length;
    if (!/immutable|max-age=(\d{5,})/.test(String(res.headers['cache-control']))) {
      uncached += res.body.length;
    }
  }
  return {
    html: page.body.length,
    raw: Buffer.byteLength(text),
    assets: assetBytes,
    uncached,
    count: assets.length,
  };
}

/**
 * Polls an expression through the DevTools protocol (page.evaluate), which the page's CSP does
 * not govern; waitForFunction's in-page polling evaluates strings, which the CSP forbids.
 */
async function until(page: import('playwright-core').Page, expression: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await page.evaluate(expression)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${expression}`);
}

/** Loads a page in headless Chromium (when installed) and reads its navigation and paint timings. */
async function renderInChromium(url: string, cookie: string) {
  const { chromiumMissing, launchChromium } = await import('../test/portal/browser.ts');
  if (chromiumMissing()) return undefined;
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    const { hostname } = new URL(url);
    await context.addCookies(
      cookie.split('; ').map((c) => {
        const [name, ...value] = c.split('=');
        return { name: name!, value: value.join('='), domain: hostname, path: '/portal' };
      }),
    );
    const page = await context.newPage();
    const runs: Array<{ server: number; paint: number; charts: number }> = [];
    for (let i = 0; i < 11; i++) {
      await page.goto(url);
      await until(page, 'window.portalCharts && window.portalCharts.plots.length === 3');
      await until(page, "performance.getEntriesByName('first-contentful-paint').length > 0");
      const r = (await page.evaluate(`(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        return {
          server: nav.responseStart - nav.requestStart,
          paint: performance.getEntriesByName('first-contentful-paint')[0].startTime,
          charts: window.portalCharts.drawnAt,
        };
      })()`)) as { server: number; paint: number; charts: number };
      if (i > 0) runs.push(r); // the first load fills the browser's cache
    }
    return runs;
  } finally {
    await browser.close();
  }
}

async function benchEngine(engine: 'pglite' | 'postgres') {
  const children: ChildProcess[] = [];
  const database = engine === 'postgres' ? await createBenchDatabase() : undefined;
  try {
    console.log(`\n== ${engine} ==`);
    const bare = await start('bench/bare-server.ts', /bare listening on (http:\/\/\S+)/);
    children.push(bare.child);
    const server = await start(
      'bench/portal-server.ts',
      /^(\{.*\})$/m,
      database ? { BENCH_DATABASE_URL: database.url } : {},
    );
    children.push(server.child);
    const info = JSON.parse(server.match[1]!) as {
      portal: string;
      links: string[];
      products: string[];
      destination: string;
      event: string;
    };
    const cookies: string[] = [];
    for (const link of info.links) cookies.push(await signIn(link));

    const pages: Array<{ name: string; path: string }> = [
      { name: 'Products', path: '/live/products' },
      { name: 'Product, 30 days', path: `/live/products/${info.products[0]}` },
      { name: 'Product, 365 days', path: `/live/products/${info.products[0]}?days=365` },
      { name: 'API keys (live)', path: '/live/keys' },
      { name: 'API keys (test)', path: '/test/keys' },
      { name: 'Team', path: '/live/team' },
      { name: 'Audit log', path: '/live/audit' },
      { name: 'Your account', path: '/live/account' },
      { name: 'Webhooks', path: '/live/webhooks' },
      { name: 'Webhook destination', path: `/live/webhooks/${info.destination}` },
      { name: 'Inbound webhooks', path: '/live/webhooks/inbound' },
      { name: 'Lifecycle event', path: `/live/webhooks/events/${info.event}` },
    ].filter((p) => chosenPage(p.name));
    const loadBefore = loadavg();

    const results: Result[] = [await load('bare Fastify route', `${bare.match[1]}/bare`, [])];
    console.log(`  ${results[0]!.name}: ${Math.round(results[0]!.rps)} req/s`);
    for (const p of pages) {
      const r = await load(p.name, `${info.portal}${p.path}`, cookies);
      results.push(r);
      console.log(`  ${r.name}: ${Math.round(r.rps)} req/s`);
    }
    const weights = [];
    for (const p of pages)
      weights.push({ ...p, ...(await weigh(`${info.portal}${p.path}`, cookies[0]!)) });

    const render = pages.some((p) => p.name === 'Product, 365 days')
      ? await renderInChromium(
          `${info.portal}/live/products/${info.products[0]}?days=365`,
          cookies[0]!,
        )
      : undefined;

    const bareRps = results[0]!.rps;
    console.log(
      `\nnpm run bench:portal (${engine}) — ${USERS} signed-in members, ${USERS} connections, ${DURATION_S} s per page, Node ${process.version}, load average ${loadBefore
        .map((l) => l.toFixed(1))
        .join(' ')} before, ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} after, on ${availableParallelism()} cores`,
    );
    console.log('page                          req/s   ratio   p50 ms  p99 ms  non-2xx  errors');
    for (const r of results) {
      console.log(
        `${r.name.padEnd(28)} ${String(Math.round(r.rps)).padStart(6)}  ${(r.rps / bareRps).toFixed(2).padStart(6)}  ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)}  ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}`,
      );
    }
    console.log(
      '\npage weight (gzip as sent)               HTML KB  (raw KB)  CSS+JS KB  files  first load KB  later visit KB',
    );
    const kb = (b: number) => (b / 1024).toFixed(1);
    for (const w of weights) {
      console.log(
        `${w.name.padEnd(40)} ${kb(w.html).padStart(7)}  ${kb(w.raw).padStart(8)}  ${kb(w.assets).padStart(9)}  ${String(w.count).padStart(5)}  ${kb(w.html + w.assets).padStart(13)}  ${kb(w.html + w.uncached).padStart(14)}`,
      );
    }
    if (render) {
      const fmt = (k: keyof (typeof render)[number]) => {
        const v = render.map((r) => r[k]).sort((a, b) => a - b);
        return `median ${v[Math.floor(v.length / 2)]!.toFixed(0)} ms, max ${v[v.length - 1]!.toFixed(0)} ms`;
      };
      console.log(
        `\nproduct page, 365 days of charts, headless Chromium, ${render.length} loads (no other load running):`,
      );
      console.log(`  server (request sent → first byte)      ${fmt('server')}`);
      console.log(`  first contentful paint                  ${fmt('paint')}`);
      console.log(`  charts drawn (after navigation start)   ${fmt('charts')}`);
    }
    console.log(
      '\ntargets: p99 < 50 ms at 20 signed-in members; HTML+CSS+JS < 60 KB compressed on a first load (static files cached a year after it: a later visit loads the HTML only); product page with 365 days: server + first paint < 500 ms',
    );
    const failed = results.filter((r) => r.non2xx > 0 || r.errors > 0);
    if (failed.length) {
      console.error(`errors answered by: ${failed.map((r) => r.name).join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    for (const c of children) await stop(c).catch(() => {});
    await database?.drop();
  }
}

/** A fresh PostgreSQL database on the server TEST_DATABASE_URL (or DATABASE_URL) names. */
async function createBenchDatabase() {
  const admin = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!admin) throw new Error('no PostgreSQL URL');
  const name = `pys_bench_portal_${Date.now()}`;
  const run = async (sql: string) => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

// PGlite always; PostgreSQL too when a server is named (BENCH_ENGINE picks one).
const engines: Array<'pglite' | 'postgres'> = ['pglite'];
if (process.env.TEST_DATABASE_URL || process.env.DATABASE_URL) engines.push('postgres');
const chosen = process.env.BENCH_ENGINE;
if (chosen === 'pglite' || chosen === 'postgres') engines.splice(0, engines.length, chosen);
for (const engine of engines) await benchEngine(engine);
