/**
 * The authenticated partner scope: key checks, the failed-auth limit per address, per-key budgets
 * with their headers, the order of checks, and (with Redis) two API processes sharing one budget.
 */
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { partnerOf } from '../../src/api/partner-identity.ts';
import { FAILED_AUTH_LIMIT, partnerScope, RATE_LIMITS } from '../../src/api/partner-scope.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { wireDependencies } from '../../src/http/dependencies.ts';
import { createRedis } from '../../src/redis.ts';
import { buildApp } from '../../src/server/app.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { deadPort } from '../helpers/net.ts';
import { testRedisUrl, uniqueRedisPrefix } from '../helpers/redis.ts';

/** A route used only by this test: it echoes who the scope says the caller is. */
const whoami: FastifyPluginAsync = async (app) => {
  app.get(
    '/api/partner/_whoami',
    {
      schema: { querystring: Type.Object({ n: Type.Optional(Type.Integer({ minimum: 1 })) }) },
      config: { validationErrorCode: () => 'invalid_days' },
    },
    async (request) => ({ success: true, data: partnerOf(request) }),
  );
};

/**
 * The contract checks of the apps built by the current test, asserted in afterEach. The test-only
 * route above is picked up by the served document but documents no 200 and none of its own 400
 * codes (those come from the route, not the scope; the scope documents only its own 400,
 * malformed_request), so the check can only report "status 200 is not documented" and its
 * invalid_days 400 as a code off the list: only those reports are left out. The scope's own
 * answers on that route (401, 429) are documented and validated, as are the probes.
 */
const contracts: ContractCheck[] = [];
const TEST_ONLY =
  /^GET \/api\/partner\/_whoami(\?\S*)? → (200: status 200 is not documented|400: data\/code must be equal to one of the allowed values in \{"success":false,"code":"invalid_days".*)$/;

async function setup(
  t: TestDatabase,
  opts: { windowMs?: number; redisPrefix?: string; clock?: () => number } = {},
) {
  const redis =
    opts.redisPrefix && testRedisUrl()
      ? createRedis(testRedisUrl()!, { keyPrefix: opts.redisPrefix })
      : undefined;
  const app = await buildTestApp({ db: t.db, redis });
  contracts.push(attachContractCheck(app));
  await app.register(partnerScope, {
    keys: createApiKeysRepo(t.db),
    redis,
    routes: [whoami],
    ...(opts.windowMs ? { windowMs: opts.windowMs } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  await app.ready();
  return { app, redis };
}

describe('partner scope', () => {
  let t: TestDatabase;
  let live: string;
  let sandbox: string;
  let revoked: string;
  let partnerId: string;

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    const partner = await createPartnersRepo(t.db).create('Acme');
    partnerId = partner.id;
    const keys = createApiKeysRepo(t.db);
    live = (await keys.create(partner.id, 'live')).key;
    sandbox = (await keys.create(partner.id, 'test')).key;
    const r = await keys.create(partner.id, 'live');
    await keys.revoke(r.record.id);
    revoked = r.key;
  });
  afterAll(async () => {
    await t.drop();
  });
  afterEach(() => {
    const off = contracts.flatMap((c) => c.violations()).filter((v) => !TEST_ONLY.test(v));
    contracts.length = 0;
    expect(off, 'responses off the OpenAPI document').toEqual([]);
  });

  it('accepts a valid key and tells the route who the caller is, with budget headers', async () => {
    const { app } = await setup(t);
    const res = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': live } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ partnerId, partnerName: 'Acme', environment: 'live' });
    expect(res.headers['ratelimit-limit']).toBe(String(RATE_LIMITS.live));
    expect(res.headers['ratelimit-remaining']).toBe(String(RATE_LIMITS.live - 1));
    expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
    await app.close();
  });

  it.each([
    ['missing', undefined, 'missing_api_key'],
    ['empty', '', 'missing_api_key'],
    ['unknown prefix', `svc_prod_${'A'.repeat(43)}`, 'invalid_api_key'],
    ['well-formed but unknown', `svc_live_${'A'.repeat(43)}`, 'invalid_api_key'],
    ['revoked', 'REVOKED', 'revoked_api_key'],
  ])('answers 401 for a %s key', async (_name, key, code) => {
    const { app } = await setup(t);
    const headers = key === undefined ? {} : { 'x-api-key': key === 'REVOKED' ? revoked : key };
    const res = await app.inject({ url: '/api/partner/_whoami', headers });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ success: false, code, message: expect.any(String) });
    await app.close();
  });

  it('checks the key before the request shape, and the shape after the budget', async () => {
    const { app } = await setup(t);
    const noKey = await app.inject({ url: '/api/partner/_whoami?n=zero' });
    expect(noKey.json().code).toBe('missing_api_key');
    const badShape = await app.inject({
      url: '/api/partner/_whoami?n=zero',
      headers: { 'x-api-key': live },
    });
    expect(badShape.statusCode).toBe(400);
    expect(badShape.json().code).toBe('invalid_days'); // the route's own code for its schema
    expect(badShape.headers['ratelimit-remaining']).toBeDefined(); // counted before validation
    await app.close();
  });

  it('exhausts a sandbox budget at exactly 100, answers 429 with Retry-After, and resets', async () => {
    // The window's clock is the test's: it ends when the test moves the clock past it, however
    // long the 100 requests take on a loaded machine.
    let now = 1_000_000;
    const { app } = await setup(t, { windowMs: 60_000, clock: () => now });
    for (let i = 1; i <= RATE_LIMITS.test; i++) {
      const ok = await app.inject({
        url: '/api/partner/_whoami',
        headers: { 'x-api-key': sandbox },
      });
      expect(ok.statusCode, `request ${i}`).toBe(200);
      expect(ok.headers['ratelimit-remaining']).toBe(String(RATE_LIMITS.test - i));
    }
    now += 59_000; // one second of the window left
    const over = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': sandbox },
    });
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ success: false, code: 'rate_limited' });
    expect(over.headers['retry-after']).toBe('1');
    expect(over.headers['ratelimit-remaining']).toBe('0');
    // Another key of the same partner has its own budget.
    const other = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': live } });
    expect(other.statusCode).toBe(200);
    now += 999; // 1 ms before the window ends: still refused
    const last = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': sandbox },
    });
    expect(last.statusCode).toBe(429);
    now += 1; // the window has ended
    const after = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': sandbox },
    });
    expect(after.statusCode).toBe(200);
    expect(after.headers['ratelimit-remaining']).toBe(String(RATE_LIMITS.test - 1));
    await app.close();
  });

  it('limits repeated failed authentication per client address, never a valid key', async () => {
    let now = 5_000_000;
    const { app } = await setup(t, { windowMs: 60_000, clock: () => now });
    for (let i = 0; i < FAILED_AUTH_LIMIT; i++) {
      const r = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': 'nope' } });
      expect(r.statusCode).toBe(401);
    }
    const blocked = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': 'nope' },
    });
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().code).toBe('rate_limited');
    expect(blocked.headers['retry-after']).toBe('60');
    // A missing key is a failed attempt too.
    const missing = await app.inject({ url: '/api/partner/_whoami' });
    expect(missing.statusCode).toBe(429);
    // A valid key from the same address is served: partners behind one egress address must not
    // lock each other out.
    const valid = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': live } });
    expect(valid.statusCode).toBe(200);
    // Another address is unaffected.
    const elsewhere = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': 'nope' },
      remoteAddress: '127.0.0.9',
    });
    expect(elsewhere.statusCode).toBe(401);
    // The window ends: failures answer 401 again.
    now += 60_000;
    const again = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': 'nope' },
    });
    expect(again.statusCode).toBe(401);
    await app.close();
  });

  /** 200 bad-key requests at once, spread over the apps: exactly the limit answer 401. */
  const concurrentFailures = async (apps: Array<Awaited<ReturnType<typeof setup>>['app']>) => {
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        apps[i % apps.length]!.inject({
          url: '/api/partner/_whoami',
          headers: { 'x-api-key': `svc_live_${String(i).padStart(43, 'B')}` },
          remoteAddress: '198.51.100.7',
        }),
      ),
    );
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(FAILED_AUTH_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - FAILED_AUTH_LIMIT);
    // With the limit reached, a valid key from that address still gets through.
    const valid = await apps[0]!.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': live },
      remoteAddress: '198.51.100.7',
    });
    expect(valid.statusCode).toBe(200);
  };

  it('counts 200 concurrent failed attempts atomically in memory', async () => {
    const { app } = await setup(t, { windowMs: 60_000 });
    await concurrentFailures([app]);
    await app.close();
  });

  it.runIf(testRedisUrl())(
    'counts 200 concurrent failed attempts atomically in Redis, across two API processes',
    async () => {
      const prefix = uniqueRedisPrefix();
      const a = await setup(t, { redisPrefix: prefix, windowMs: 60_000 });
      const b = await setup(t, { redisPrefix: prefix, windowMs: 60_000 });
      await concurrentFailures([a.app, b.app]);
      for (const x of [a, b]) {
        await x.app.close();
        await x.redis?.quit();
      }
    },
  );

  it('with Redis down, a bad key still answers 401 and a valid key 200, never a 500; failures count in memory', async () => {
    // A real outage: a loopback port with nothing listening.
    const redis = createRedis(`redis://127.0.0.1:${await deadPort()}`);
    redis.on('error', () => {}); // connection refusals are the point of this test
    const logs = captureLogger();
    const app = await buildApp({ db: t.db, logger: logs.logger });
    contracts.push(attachContractCheck(app));
    await app.register(partnerScope, {
      keys: createApiKeysRepo(t.db),
      redis,
      routes: [whoami],
    });
    await app.ready();
    const bad = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': 'nope' } });
    expect(bad.statusCode).toBe(401);
    expect(bad.json().code).toBe('invalid_api_key');
    // The failures still count, in this process's memory (fixed-window.ts): past the limit, 429.
    const refusals: number[] = [];
    for (let i = 1; i < FAILED_AUTH_LIMIT + 2; i++) {
      const res = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': 'no' } });
      refusals.push(res.statusCode);
    }
    expect(refusals.slice(0, FAILED_AUTH_LIMIT - 1)).toEqual(
      Array(FAILED_AUTH_LIMIT - 1).fill(401),
    );
    expect(refusals.slice(FAILED_AUTH_LIMIT - 1)).toEqual([429, 429]);
    expect(logs.lines().filter((l) => l.includes('"level":50'))).toEqual([]);
    const good = await app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': live } });
    expect(good.statusCode).toBe(200);
    await app.close();
    redis.disconnect();
  });

  it('never counts the liveness probe and never asks it for a key', async () => {
    const { app } = await setup(t);
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({ url: '/health' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
    await app.close();
  });

  it.runIf(testRedisUrl())(
    'two API processes share one key budget exactly through Redis',
    async () => {
      const prefix = uniqueRedisPrefix();
      const a = await setup(t, { redisPrefix: prefix, windowMs: 30_000 });
      const b = await setup(t, { redisPrefix: prefix, windowMs: 30_000 });
      const statuses: number[] = [];
      // Alternate between the two apps: together they must allow exactly the sandbox budget.
      for (let i = 0; i < RATE_LIMITS.test + 10; i++) {
        const app = i % 2 === 0 ? a.app : b.app;
        const res = await app.inject({
          url: '/api/partner/_whoami',
          headers: { 'x-api-key': sandbox },
        });
        statuses.push(res.statusCode);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(RATE_LIMITS.test);
      expect(statuses.slice(RATE_LIMITS.test).every((s) => s === 429)).toBe(true);
      for (const x of [a, b]) {
        await x.app.close();
        await x.redis?.quit();
      }
    },
  );
});

/**
 * The same rules when the key's record comes from the API's read cache, as in the service: a
 * working key the cache holds is admitted and counted without a promise (the hook's synchronous
 * path), and every refusal still answers as above.
 */
describe('partner scope, keys answered from the read cache', () => {
  let t: TestDatabase;
  let partnerId: string;

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    partnerId = (await createPartnersRepo(t.db).create('Acme')).id;
  });
  afterAll(async () => {
    await t.drop();
  });

  async function cachedSetup(clock?: () => number) {
    const deps = wireDependencies({ db: t.db, readCache: { pollMs: 60_000 } });
    await deps.cache.refresh();
    let lookups = 0;
    const keys = {
      findByKey: (key: string) => {
        lookups++;
        return deps.keys.findByKey(key);
      },
      cachedByKey: deps.keys.cachedByKey,
    };
    const app = await buildTestApp({ db: t.db });
    contracts.push(attachContractCheck(app));
    await app.register(partnerScope, {
      keys,
      routes: [whoami],
      windowMs: 60_000,
      ...(clock ? { clock } : {}),
    });
    await app.ready();
    return { app, deps, lookups: () => lookups };
  }
  afterEach(() => {
    const off = contracts.flatMap((c) => c.violations()).filter((v) => !TEST_ONLY.test(v));
    contracts.length = 0;
    expect(off, 'responses off the OpenAPI document').toEqual([]);
  });

  it('looks a key up once, then admits and counts it from memory, exhausting the budget exactly', async () => {
    const sandbox = (await createApiKeysRepo(t.db).create(partnerId, 'test')).key;
    let now = 7_000_000;
    const { app, deps, lookups } = await cachedSetup(() => now);
    for (let i = 1; i <= RATE_LIMITS.test; i++) {
      const ok = await app.inject({
        url: '/api/partner/_whoami',
        headers: { 'x-api-key': sandbox },
      });
      expect(ok.statusCode, `request ${i}`).toBe(200);
      expect(ok.json().data).toMatchObject({ partnerId, environment: 'test' });
      expect(ok.headers['ratelimit-limit']).toBe(String(RATE_LIMITS.test));
      expect(ok.headers['ratelimit-remaining']).toBe(String(RATE_LIMITS.test - i));
      expect(ok.headers['ratelimit-reset']).toBe('60');
    }
    // One lookup, by the first request; the other 99 were answered from the cache.
    expect(lookups()).toBe(1);
    now += 59_000;
    const over = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': sandbox },
    });
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ success: false, code: 'rate_limited' });
    expect(over.headers['retry-after']).toBe('1');
    expect(over.headers['ratelimit-remaining']).toBe('0');
    expect(lookups()).toBe(1);
    now += 1_000; // the window has ended
    const after = await app.inject({
      url: '/api/partner/_whoami',
      headers: { 'x-api-key': sandbox },
    });
    expect(after.statusCode).toBe(200);
    expect(after.headers['ratelimit-remaining']).toBe(String(RATE_LIMITS.test - 1));
    await app.close();
    deps.cache.close();
  });

  it('refuses unknown and revoked keys the cache holds, and a rolled key from its end', async () => {
    const repo = createApiKeysRepo(t.db);
    const revoked = await repo.create(partnerId, 'live');
    await repo.revoke(revoked.record.id);
    const rolled = await repo.create(partnerId, 'live');
    // A roll's overlap: the key works until its end, 1.5 s from now.
    await t.db.query(
      `UPDATE api_keys SET revoked_at = now() + interval '1500 milliseconds' WHERE id = $1`,
      [rolled.record.id],
    );
    const { app, deps } = await cachedSetup();
    await deps.cache.refresh();
    const unknown = `svc_live_${'B'.repeat(43)}`;
    const ask = (key: string) =>
      app.inject({ url: '/api/partner/_whoami', headers: { 'x-api-key': key } });
    for (let round = 0; round < 2; round++) {
      // The second round finds each record (or its absence) in the cache.
      expect((await ask(unknown)).json().code).toBe('invalid_api_key');
      expect((await ask(revoked.key)).json().code).toBe('revoked_api_key');
      expect((await ask(rolled.key)).statusCode).toBe(200);
    }
    expect(deps.keys.cachedByKey?.(rolled.key)?.value?.id).toBe(rolled.record.id);
    await new Promise((r) => setTimeout(r, 1_600));
    // Still the cached record, now past its end.
    const ended = await ask(rolled.key);
    expect(ended.statusCode).toBe(401);
    expect(ended.json().code).toBe('revoked_api_key');
    await app.close();
    deps.cache.close();
  });
});
