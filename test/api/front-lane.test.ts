/**
 * The front lane (src/api/front-lane.ts) against the lifecycle, with real servers on one PGlite
 * database and a real local chain: two apps, one with the lane and one without, are asked the same
 * requests over HTTP, and every answer must be the same status, the same headers (in the same
 * order) and the same bytes, but for the request id, the date and the rate-limit counts, whose
 * rules are checked on their own. Then every way a held answer stops being the route's: a new
 * read-model version, midnight, a chain reading that expires, a revoked key, a spent budget.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainClient, createChainClient } from '../../src/chain/client.ts';
import { ensureLocalChain, type LocalChain } from '../../src/chain/local/ensure.ts';
import { createRpc } from '../../src/chain/local/rpc.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import type { buildApp } from '../../src/server/app.ts';
import { frontLaneAnswers } from '../../src/telemetry/metrics.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { provisionFromDeployment } from '../helpers/local-products.ts';
import { waitFor } from '../helpers/process.ts';
import { daysEnding, insertSnapshots } from '../helpers/snapshots.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

interface Answer {
  status: number;
  /** Raw header pairs, names lower-cased, in the order sent. */
  headers: Array<[string, string]>;
  body: Buffer;
}

function get(
  port: number,
  url: string,
  headers: Record<string, string | undefined>,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: url, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const pairs: Array<[string, string]> = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            pairs.push([res.rawHeaders[i]!.toLowerCase(), res.rawHeaders[i + 1]!]);
          }
          resolve({ status: res.statusCode!, headers: pairs, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Headers whose values differ by request or by moment, by rule: compared by name and place only. */
const PER_REQUEST = new Set(['x-request-id', 'date', 'ratelimit-remaining', 'ratelimit-reset']);

const comparable = (a: Answer) => ({
  status: a.status,
  headers: a.headers.map(([n, v]) => (PER_REQUEST.has(n) ? [n, '…'] : [n, v])),
  body: a.body.toString('base64'),
});

describe('the front lane answers as the lifecycle does', () => {
  let dataDir: string;
  let chain: LocalChain;
  let t: TestDatabase;
  let client: ChainClient;
  let lane: App;
  let plain: App;
  let lanePort: number;
  let plainPort: number;
  let nowMs = Date.parse('2026-06-30T12:00:00Z');
  const keys: Record<'acme' | 'acme2' | 'acmeTest' | 'bravo', string> = {
    acme: '',
    acme2: '',
    acmeTest: '',
    bravo: '',
  };
  let core: string;
  let holder: string;

  const build = async (frontLane: boolean) => {
    const app = await buildTestApp({
      db: t.db,
      frontLane,
      chains: [{ chainId: chain.deployment.chainId, name: 'Local', evm: true, client }],
      chainReads: { timeoutMs: 1500, cacheMs: 60_000, headMs: 60_000 },
      readCache: { pollMs: 50 },
      now: () => new Date(nowMs),
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    return app;
  };
  const portOf = (app: App) => (app.server.address() as { port: number }).port;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'pys-front-lane-'));
    chain = await ensureLocalChain({ dataDir, seed: 'front-lane', days: 3, port: 0 });
    t = await freshDatabase('pglite');
    const { partners, products } = await provisionFromDeployment(t.db, chain.deployment);
    const repo = createApiKeysRepo(t.db);
    const acme = partners.get('Acme Wallet')!;
    keys.acme = (await repo.create(acme, 'live')).key;
    keys.acme2 = (await repo.create(acme, 'live')).key;
    keys.acmeTest = (await repo.create(acme, 'test')).key;
    keys.bravo = (await repo.create([...partners.values()].find((p) => p !== acme)!, 'live')).key;
    const e = chain.deployment.engines['acme-live-usdc-core']!;
    core = e.slug;
    holder = e.holders[0]!.toLowerCase();
    // 200 days of snapshots ending yesterday (the pinned clock's), enough for every window.
    const dates = daysEnding('2026-06-29', 200);
    await insertSnapshots(
      t.db,
      products.get(core)!.id,
      dates.map((date, i) => ({
        date,
        totalAssets: 1_000_000_000n + BigInt(i) * 1_000n,
        underlyingApy: i === 0 ? null : '0.051234',
        netApy: i === 0 ? null : '0.046789',
        dailyYield: i === 0 ? null : 1_000n + BigInt(i),
        dailyPartnerFee: i === 0 ? null : 30n,
        dailyServiceFee: i === 0 ? null : 20n,
      })),
    );
    const e2 = chain.deployment.engines;
    client = createChainClient({
      chainId: chain.deployment.chainId,
      name: 'local',
      rpcUrls: [chain.deployment.rpcUrl],
    });
    lane = await build(true);
    plain = await build(false);
    lanePort = portOf(lane);
    plainPort = portOf(plain);
    expect(Object.keys(e2).length).toBeGreaterThan(1);
  }, 180_000);

  afterAll(async () => {
    await lane?.close();
    await plain?.close();
    await t?.drop();
    await chain?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const heldUrls = () => [
    '/api/partner/products',
    `/api/partner/products/${core}`,
    `/api/partner/products/${core}/apy-history`,
    `/api/partner/products/${core}/apy-history?days=7`,
    `/api/partner/products/${core}/apy-history?days=180`,
    `/api/partner/products/${core}/fee-stats`,
    `/api/partner/products/${core}/fee-stats?start_date=2025-07-01&end_date=2026-06-29`,
    `/api/partner/products/${core}/fee-stats?start_date=2026-06-01`,
    `/api/partner/products/${core}/health`,
    `/api/partner/products/${core}/position?address=${holder}`,
  ];

  /** Asks both apps the same request twice (the second may be the lane's) and compares. */
  async function both(url: string, headers: Record<string, string | undefined>) {
    const lanes = frontLaneAnswers.count;
    const first = await get(lanePort, url, headers);
    const second = await get(lanePort, url, headers);
    const answeredByLane = frontLaneAnswers.count - lanes;
    const reference = await get(plainPort, url, headers);
    const referenceAgain = await get(plainPort, url, headers);
    return { first, second, reference, referenceAgain, answeredByLane };
  }

  it('answers every held route, both encodings, with the same status, headers and bytes', async () => {
    for (const url of heldUrls()) {
      for (const encoding of [{}, { 'accept-encoding': 'gzip' }]) {
        const headers = { 'x-api-key': keys.acme, ...encoding };
        const r = await both(url, headers);
        expect(r.first.status, url).toBe(200);
        // The first request is the route's (it holds the answer); the second the lane's.
        expect(r.answeredByLane, `${url} ${JSON.stringify(encoding)}`).toBe(1);
        expect(comparable(r.second), url).toEqual(comparable(r.referenceAgain));
        expect(comparable(r.first), url).toEqual(comparable(r.reference));
      }
    }
  });

  it('sends the per-request headers by the lifecycle’s rules: a fresh or echoed id, the key’s count', async () => {
    const url = `/api/partner/products/${core}`;
    const headers = { 'x-api-key': keys.acme2 };
    await get(lanePort, url, headers);
    const lanes = frontLaneAnswers.count;
    const a = await get(lanePort, url, headers);
    const b = await get(lanePort, url, { ...headers, 'x-request-id': 'trace-abc-123' });
    const keyShaped = await get(lanePort, url, { ...headers, 'x-request-id': keys.acme });
    expect(frontLaneAnswers.count - lanes).toBe(3);
    const h = (x: Answer) => Object.fromEntries(x.headers);
    expect(h(a)['x-request-id']).toMatch(/^req_/);
    expect(h(b)['x-request-id']).toBe('trace-abc-123');
    // A key sent as the request id is never echoed (request-id.ts), by the lane either.
    expect(h(keyShaped)['x-request-id']).not.toBe(keys.acme);
    expect(h(keyShaped)['x-request-id']).toMatch(/^req_/);
    // One budget, counted once a request, whichever way it was answered.
    expect(h(a)['ratelimit-limit']).toBe('1000');
    expect(Number(h(b)['ratelimit-remaining'])).toBe(Number(h(a)['ratelimit-remaining']) - 1);
    expect(Number(h(keyShaped)['ratelimit-remaining'])).toBe(
      Number(h(a)['ratelimit-remaining']) - 2,
    );
  });

  it('keeps answers apart by scope: another key of the partner shares them, other scopes do not', async () => {
    const url = '/api/partner/products';
    await get(lanePort, url, { 'x-api-key': keys.acme });
    const lanes = frontLaneAnswers.count;
    const sameScope = await get(lanePort, url, { 'x-api-key': keys.acme2 });
    expect(frontLaneAnswers.count - lanes).toBe(1);
    for (const key of [keys.acmeTest, keys.bravo]) {
      const before = frontLaneAnswers.count;
      const own = await get(lanePort, url, { 'x-api-key': key });
      const reference = await get(plainPort, url, { 'x-api-key': key });
      expect(frontLaneAnswers.count - before, 'a new scope is the route’s first').toBe(0);
      expect(comparable(own)).toEqual(comparable(reference));
      expect(own.body.equals(sameScope.body)).toBe(false);
    }
  });

  it('leaves refusals, other methods and bodies to the lifecycle', async () => {
    const url = `/api/partner/products/${core}`;
    await get(lanePort, url, { 'x-api-key': keys.acme });
    const lanes = frontLaneAnswers.count;
    for (const headers of [{}, { 'x-api-key': 'pk_live_nope' }, { 'x-api-key': `${keys.acme}x` }]) {
      const own = await get(lanePort, url, headers);
      const reference = await get(plainPort, url, headers);
      expect(own.status).toBe(401);
      expect(comparable(own).body).toEqual(comparable(reference).body);
    }
    const head = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: lanePort,
          path: url,
          method: 'HEAD',
          headers: { 'x-api-key': keys.acme },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(head).toBe(200);
    expect(frontLaneAnswers.count - lanes).toBe(0);
    // A HEAD holds nothing: the next GET of a URL asked only by HEAD is the route's.
    const fresh = `/api/partner/products/${core}/apy-history?days=30&head=1`;
    const headFresh = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: lanePort,
          path: fresh,
          method: 'HEAD',
          headers: { 'x-api-key': keys.acme },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(headFresh).toBe(200);
    const afterHead = await get(lanePort, fresh, { 'x-api-key': keys.acme });
    expect(frontLaneAnswers.count - lanes).toBe(0);
    expect(JSON.parse(afterHead.body.toString()).data.length).toBeGreaterThan(0);
  });

  it('stops holding an answer once the read model changes (a paused product, at once)', async () => {
    const url = `/api/partner/products/${core}`;
    const headers = { 'x-api-key': keys.acme };
    const before = await get(lanePort, url, headers);
    await get(lanePort, url, headers);
    try {
      await t.db.query(`UPDATE products SET status = 'paused' WHERE slug = $1`, [core]);
      // The read cache sees the new version within its poll; from then on no old answer is sent.
      await waitFor(
        async () =>
          JSON.parse((await get(plainPort, url, headers)).body.toString()).data.status === 'paused',
        10_000,
        'the lifecycle app sees the pause',
      );
      await lane.ready();
      const after = await waitFor(
        async () => {
          const a = await get(lanePort, url, headers);
          return JSON.parse(a.body.toString()).data.status === 'paused' ? a : undefined;
        },
        10_000,
        'the lane app sees the pause',
      );
      expect(after.body.equals(before.body)).toBe(false);
      // Once seen, never the old answer again, by either path.
      for (let i = 0; i < 5; i++) {
        const a = await get(lanePort, url, headers);
        expect(JSON.parse(a.body.toString()).data.status).toBe('paused');
      }
    } finally {
      await t.db.query(`UPDATE products SET status = 'active' WHERE slug = $1`, [core]);
    }
  });

  it('stops holding a dated window at midnight', async () => {
    // The day before the pinned one: the 7-day window ends the day before it (today never has a
    // snapshot), although the snapshot of that day itself is stored. At midnight it ends a day later
    // with no change to the read model.
    const url = `/api/partner/products/${core}/apy-history?days=7`;
    const headers = { 'x-api-key': keys.acme };
    const pinned = nowMs;
    nowMs = Date.parse('2026-06-29T23:59:59Z');
    try {
      await get(lanePort, url, headers);
      const held = await get(lanePort, url, headers);
      const lanes = frontLaneAnswers.count;
      nowMs = Date.parse('2026-06-30T00:00:00Z');
      const own = await get(lanePort, url, headers);
      const reference = await get(plainPort, url, headers);
      expect(frontLaneAnswers.count - lanes).toBe(0);
      expect(comparable(own)).toEqual(comparable(reference));
      const newest = (a: Answer) => JSON.parse(a.body.toString()).data[0].date;
      expect([newest(held), newest(own)]).toEqual(['2026-06-28', '2026-06-29']);
    } finally {
      nowMs = pinned;
    }
  });

  it('stops holding a revoked key’s answers: 401 at once', async () => {
    const repo = createApiKeysRepo(t.db);
    const partnerId = (
      await t.db.query<{ partner_id: string }>(`SELECT partner_id FROM products WHERE slug = $1`, [
        core,
      ])
    ).rows[0]!.partner_id;
    const {
      key,
      record: { id },
    } = await repo.create(partnerId, 'live');
    const url = '/api/partner/products';
    await get(lanePort, url, { 'x-api-key': key });
    expect((await get(lanePort, url, { 'x-api-key': key })).status).toBe(200);
    await repo.revoke(id);
    const refused = await waitFor(
      async () => {
        const a = await get(lanePort, url, { 'x-api-key': key });
        return a.status === 401 ? a : undefined;
      },
      10_000,
      'the revoked key refused',
    );
    expect(JSON.parse(refused.body.toString()).code).toBe('revoked_api_key');
  });

  it('counts a budget once a request and answers the 429 as the lifecycle does', async () => {
    const url = '/api/partner/products';
    const { key } = await createApiKeysRepo(t.db).create(
      (await t.db.query<{ id: string }>(`SELECT id FROM partners WHERE name = 'Acme Wallet'`))
        .rows[0]!.id,
      'test',
    );
    // A new key is a new read-model version: let the apps see it before counting answers.
    await new Promise((r) => setTimeout(r, 300));
    const statuses: number[] = [];
    const remaining: number[] = [];
    const lanes = frontLaneAnswers.count;
    let refusal: Answer | undefined;
    for (let i = 0; i < 105; i++) {
      const a = await get(lanePort, url, { 'x-api-key': key });
      statuses.push(a.status);
      const h = Object.fromEntries(a.headers);
      if (a.status === 200) remaining.push(Number(h['ratelimit-remaining']));
      else refusal ??= a;
    }
    // Sandbox keys: 100 a minute. Every request counted exactly once, both ways.
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.slice(100)).toEqual([429, 429, 429, 429, 429]);
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
    // The first answer is the route's (it holds it), the next 99 the lane's; the refusals are the
    // lifecycle's, counted by the lane once and not again.
    expect(frontLaneAnswers.count - lanes).toBe(99);
    const h = Object.fromEntries(refusal!.headers);
    expect(JSON.parse(refusal!.body.toString()).code).toBe('rate_limited');
    expect(h['ratelimit-remaining']).toBe('0');
    expect(Number(h['retry-after'])).toBeGreaterThan(0);
  });

  it('stops holding a position and health once their chain reading is not the cached one', async () => {
    // An app whose chain readings last 300 ms: after that the route reads again.
    const short = await buildTestApp({
      db: t.db,
      chains: [{ chainId: chain.deployment.chainId, name: 'Local', evm: true, client }],
      chainReads: { timeoutMs: 1500, cacheMs: 300, headMs: 0 },
      readCache: { pollMs: 50 },
      now: () => new Date(nowMs),
    });
    await short.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = portOf(short);
      for (const url of [
        `/api/partner/products/${core}/health`,
        `/api/partner/products/${core}/position?address=${holder}`,
      ]) {
        const headers = { 'x-api-key': keys.acme };
        const before = await get(port, url, headers);
        const lanes = frontLaneAnswers.count;
        await get(port, url, headers);
        expect(frontLaneAnswers.count - lanes, url).toBe(1);
        // A block later, once the reading expired, the answer names the new block.
        await createRpc(chain.deployment.rpcUrl)('evm_mine', []);
        await new Promise((r) => setTimeout(r, 400));
        const after = await get(port, url, headers);
        expect(frontLaneAnswers.count - lanes, url).toBe(1);
        if (url.endsWith('/health')) {
          expect(JSON.parse(after.body.toString()).data.last_block).toBeGreaterThan(
            JSON.parse(before.body.toString()).data.last_block,
          );
        }
      }
    } finally {
      await short.close();
    }
  });
});

/**
 * Fastify's route tree (printRoutes with hooks) as `GET /full/path` → stage → hook names. Each
 * route line is indented four columns a level; its hook lines (`• (stage) [names]`) follow it.
 */
function routeHooks(tree: string): Map<string, Record<string, string[]>> {
  const routes = new Map<string, Record<string, string[]>>();
  const segments: string[] = [];
  let current: Record<string, string[]> | undefined;
  for (const line of tree.split('\n')) {
    const hook = /^[│\s]*• \((\w+)\) (\[.*\])$/.exec(line);
    if (hook) {
      if (current) current[hook[1]!] = JSON.parse(hook[2]!);
      continue;
    }
    const route = /^([│\s]*)(?:[├└]── )?(\S.*?) \(([A-Z, ]+)\)$/.exec(line);
    if (!route) continue;
    // The column the segment starts at: after the indent, and after a branch mark if any.
    const column = route[1]!.length + (/[├└]── /.test(line) ? 4 : 0);
    const depth = Math.max(0, column / 4 - 1);
    segments.length = depth;
    segments[depth] = route[2]!;
    current = {};
    for (const method of route[3]!.split(', '))
      routes.set(`${method} ${segments.join('')}`, current);
  }
  return routes;
}

describe('the front lane knows every hook of the routes it answers for', () => {
  it('fails when a hook is added to a held route: the lane must do its work too', async () => {
    const t = await freshDatabase('pglite');
    const app = await buildTestApp({ db: t.db });
    try {
      await app.ready();
      const hooks = routeHooks(app.printRoutes({ includeHooks: true, commonPrefix: false }));
      const held = [
        '/api/partner/products',
        '/api/partner/products/:slug',
        '/api/partner/products/:slug/apy-history',
        '/api/partner/products/:slug/fee-stats',
        '/api/partner/products/:slug/health',
        '/api/partner/products/:slug/position',
      ];
      for (const route of held) {
        // What the lane does for each: sendRequestId (the same id rule), admitKey (the same key
        // cache and budget), refuseUnsafeText (the headers; the URL was checked when held),
        // closeConnectionWhenClosing (the lane answers nothing while closing), sendCacheControl
        // and the route's own headers (held as sent), recordHeldAnswer (the holding itself),
        // logAccess (the same line and metrics). A new hook here needs its twin in front-lane.ts.
        expect(hooks.get(`GET ${route}`), route).toEqual({
          onRequest: ['sendRequestId()', 'admitKey()'],
          preValidation: ['refuseUnsafeText()'],
          onSend: ['closeConnectionWhenClosing()', 'sendCacheControl()', 'recordHeldAnswer()'],
          onResponse: ['logAccess()'],
        });
      }
      // Only these routes hold answers: every other route of the scope runs no recording hook.
      const holding = [...hooks]
        .filter(([, stages]) => stages.onSend?.includes('recordHeldAnswer()'))
        .map(([route]) => route)
        .filter((r) => r.startsWith('GET '))
        .sort();
      expect(holding).toEqual(held.map((r) => `GET ${r}`).sort());
    } finally {
      await app.close();
      await t.drop();
    }
  });
});
