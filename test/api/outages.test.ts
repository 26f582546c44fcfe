/**
 * Storage and cache outages against real servers through a TCP proxy the test owns (#33):
 *
 * - PostgreSQL refused (the proxy closes its port): requests that need the database answer 503
 *   service_unavailable with Retry-After, not 500 internal_error; the outage is one warn line, no
 *   line at error level; the API answers 200 again once PostgreSQL is back.
 * - Redis silent (the proxy swallows every byte of the open connections, which stay dead after
 *   Redis heals, as behind a NAT that lost them): the connection is replaced, the per-key budget
 *   of a 100-a-minute key is enforced per process meanwhile (it was not at all: 120 of 120
 *   passed), requests are not held a second each, and /ready is 200 within seconds of Redis
 *   being reachable again.
 * - Redis down under the portal (sessions kept there): signed-in pages answer 503 with
 *   Retry-After, not 500.
 *
 * The figures are printed (`[outages]` lines).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createDatabase, type Database } from '../../src/db/client.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createRedis, type Redis } from '../../src/redis.ts';
import { buildApp } from '../../src/server/app.ts';
import { partnerWithKey } from '../helpers/builders.ts';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';
import { testRedisUrl, uniqueRedisPrefix } from '../helpers/redis.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { type Harness, portalHarness } from '../portal/harness.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

const levels = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe.runIf(postgresAdminUrl())('PostgreSQL refused', () => {
  let t: TestDatabase;
  let proxy: TcpProxy;
  let db: Database;
  let app: App;
  let key = '';
  const logs = captureLogger();

  beforeAll(async () => {
    t = await freshDatabase('postgres');
    key = (await partnerWithKey(t.db, 'Acme Wallet')).key;
    const url = new URL(t.location);
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(url.port || 5432) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    db = await createDatabase({ engine: 'postgres', url: url.toString(), poolMax: 4 });
    app = await buildApp({ db, logger: logs.logger });
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await proxy?.setMode('up');
    await db?.close();
    await proxy?.close();
    await t?.drop();
  });

  const get = (url: string, apiKey = key) =>
    app.inject({ method: 'GET', url, headers: { 'x-api-key': apiKey } });

  it('answers 503 service_unavailable with Retry-After, logs the outage once at warn, and recovers', async () => {
    expect((await get('/api/partner/products')).statusCode).toBe(200);
    const before = logs.lines().length;
    await proxy.setMode('down');
    const answers: Array<{ status: number; code: string; retryAfter: unknown }> = [];
    // Slugs and keys never seen: the read cache cannot answer them, the database must.
    for (let i = 0; i < 20; i++) {
      const res =
        i % 2
          ? await get(`/api/partner/products/never-seen-${i}`)
          : await get('/api/partner/products', `svc_live_${randomBytes(32).toString('base64url')}`);
      answers.push({
        status: res.statusCode,
        code: JSON.parse(res.body).code,
        retryAfter: res.headers['retry-after'],
      });
    }
    expect(answers).toEqual(
      Array(20).fill({ status: 503, code: 'service_unavailable', retryAfter: '5' }),
    );
    const during = levels(logs.lines().slice(before));
    const warns = during.filter((l) => l.level === 40);
    const errors = during.filter((l) => (l.level as number) >= 50);
    expect(errors).toEqual([]);
    expect(warns.map((l) => l.msg)).toEqual([
      'database unreachable: requests that need it answer 503 service_unavailable',
    ]);
    // The access lines stay at info (the outage is already said once).
    expect(during.filter((l) => l.msg === 'request completed' && l.level !== 30)).toEqual([]);

    await proxy.setMode('up');
    const backAt = Date.now();
    await waitFor(
      async () =>
        (await get('/api/partner/products/never-seen-1')).statusCode === 404 ? true : undefined,
      10_000,
      'the database back',
    );
    console.log(
      `[outages] PostgreSQL refused: 20/20 answered 503 service_unavailable (Retry-After 5), ${warns.length} warn line, ${errors.length} error lines; answering again ${Date.now() - backAt} ms after it was back`,
    );
  });
});

describe.runIf(testRedisUrl())('Redis silent', () => {
  let t: TestDatabase;
  let proxy: TcpProxy;
  let redis: Redis;
  let app: App;
  let testKey = '';
  const logs = captureLogger();

  beforeAll(async () => {
    t = await freshDatabase(postgresAdminUrl() ? 'postgres' : 'pglite');
    const partner = await createPartnersRepo(t.db).create('Acme Wallet');
    testKey = (await createApiKeysRepo(t.db).create(partner.id, 'test')).key;
    const target = new URL(testRedisUrl()!);
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(target.port || 6379) });
    redis = createRedis(`redis://127.0.0.1:${proxy.port}`, {
      keyPrefix: uniqueRedisPrefix(),
      logger: logs.logger,
    });
    app = await buildApp({ db: t.db, logger: logs.logger, redis });
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    redis?.disconnect();
    await proxy?.close();
    await t?.drop();
  });

  const products = async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/api/partner/products',
      headers: { 'x-api-key': testKey },
    });
    return res.statusCode;
  };
  const ready = async () => (await app.inject({ method: 'GET', url: '/ready' })).statusCode;

  it('replaces the silent connection, enforces the budget per process meanwhile, and is ready within seconds of Redis', async () => {
    await waitFor(async () => ((await ready()) === 200 ? true : undefined), 10_000, 'ready');
    for (let i = 0; i < 5; i++) expect(await products()).toBe(200);

    await proxy.setMode('silent');
    const started = Date.now();
    const during: number[] = [];
    for (let i = 0; i < 120; i++) during.push(await products());
    const outageMs = Date.now() - started;
    const passed = during.filter((s) => s === 200).length;
    const firstRefusal = during.indexOf(429) + 1;
    // The local budget: the 100 a minute of a test key, counted by this process alone.
    expect(passed).toBe(100);
    expect(firstRefusal).toBe(101);
    expect(during.slice(100)).toEqual(Array(20).fill(429));
    // Not a second per request (the command timeout): only those sent before the connection was
    // found silent waited.
    expect(outageMs).toBeLessThan(10_000);
    expect(await ready()).toBe(503);

    await proxy.setMode('up');
    const healedAt = Date.now();
    await waitFor(async () => ((await ready()) === 200 ? true : undefined), 10_000, 'ready again');
    const recoveredMs = Date.now() - healedAt;
    expect(recoveredMs).toBeLessThan(5_000);
    // The shared count is back: the budget is Redis's again, 5 counted before the outage and
    // none of the outage's (counted in memory; ioredis would have sent the swallowed ones again).
    let refusedAt = 0;
    for (let i = 1; i <= 101 && !refusedAt; i++) if ((await products()) === 429) refusedAt = i;
    expect(refusedAt).toBe(96);
    const lines = levels(logs.lines());
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    // The lost connection is said once, and its return once.
    expect(lines.filter((l) => l.msg === 'redis connection lost; reconnecting')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'redis connection ready again')).toHaveLength(1);
    console.log(
      `[outages] Redis silent: ${passed}/120 passed on a 100/min key (first 429 at ${firstRefusal}) in ${outageMs} ms; /ready 200 again ${recoveredMs} ms after Redis healed; after it, 429 at request ${refusedAt} (Redis count)`,
    );
  }, 60_000);
});

describe.runIf(testRedisUrl())('Redis down under the portal', () => {
  let proxy: TcpProxy;
  let redis: Redis;
  let h: Harness;

  beforeAll(async () => {
    const target = new URL(testRedisUrl()!);
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(target.port || 6379) });
    redis = createRedis(`redis://127.0.0.1:${proxy.port}`, { keyPrefix: uniqueRedisPrefix() });
    h = await portalHarness({ redis });
  });

  afterAll(async () => {
    await h?.close();
    redis?.disconnect();
    await proxy?.close();
  });

  it('a signed-in page answers 503 with Retry-After while its session store is unreachable, not 500', async () => {
    const member = await h.signedIn('owner@acme.test');
    expect((await member.get('/portal/live/keys')).status).toBe(200);
    await proxy.setMode('down');
    const pages = [];
    for (let i = 0; i < 5; i++) pages.push(await member.get('/portal/live/keys'));
    expect(pages.map((p) => [p.status, p.headers['retry-after']])).toEqual(
      Array(5).fill([503, '5']),
    );
    const lines = levels(h.logLines());
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect(
      lines.filter(
        (l) => l.msg === 'redis unreachable: requests that need it answer 503 service_unavailable',
      ),
    ).toHaveLength(1);
    await proxy.setMode('up');
    await waitFor(
      async () => ((await member.get('/portal/live/keys')).status === 200 ? true : undefined),
      10_000,
      'the portal back',
    );
  });
});
