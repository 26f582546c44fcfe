/** The HTTP basics every route shares: probes, the error envelope, request ids, limits, logs. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.ts';
import { createRedis } from '../../src/redis.ts';
import { buildApp } from '../../src/server/app.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { deadPort } from '../helpers/net.ts';
import { testRedisUrl, uniqueRedisPrefix } from '../helpers/redis.ts';

describe('HTTP basics', () => {
  let t: TestDatabase;
  const logs = captureLogger();
  let app: Awaited<ReturnType<typeof buildApp>>;
  let contract: ContractCheck;

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    app = await buildApp({ db: t.db, logger: logs.logger });
    contract = attachContractCheck(app);
    // Routes that fail on purpose, registered only in this test.
    app.get('/test/crash', async () => {
      throw new Error('secret internals: password=hunter2');
    });
    app.get('/test/api-error', async () => {
      throw new ApiError('rate_limited', undefined, { 'retry-after': '7' });
    });
    app.post('/test/echo', async (request) => ({ success: true, data: request.body }));
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  it('GET /health answers the liveness shape without a key', async () => {
    const res = await app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true, data: { status: 'ok' } });
  });

  it('GET /ready checks the database', async () => {
    const res = await app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      success: true,
      data: {
        status: 'ready',
        database: 'ok',
        redis: 'not_configured',
        chains: 'not_configured',
        demo: 'off',
      },
    });
  });

  it('unknown routes answer 404 not_found in the envelope', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/partner/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ success: false, code: 'not_found' });
    expect(typeof res.json().message).toBe('string');
  });

  it('unexpected errors answer 500 internal_error without internals, and are logged', async () => {
    const res = await app.inject({ method: 'GET', url: '/test/crash' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      success: false,
      code: 'internal_error',
      message: expect.any(String),
    });
    expect(res.body).not.toContain('hunter2');
    expect(
      logs
        .lines()
        .some((l) => l.includes('"level":50') && l.includes(res.headers['x-request-id'] as string)),
    ).toBe(true);
  });

  it('an ApiError answers its catalogue status, code and headers', async () => {
    const res = await app.inject({ method: 'GET', url: '/test/api-error' });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('7');
    expect(res.json()).toMatchObject({ success: false, code: 'rate_limited' });
  });

  it('bodies over 64 KiB answer 413 payload_too_large; 64 KiB exactly passes', async () => {
    const wrap = (n: number) => JSON.stringify({ s: 'a'.repeat(n - 8) }); // {"s":""} is 8 bytes
    const ok = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: wrap(64 * 1024),
    });
    expect(ok.statusCode).toBe(200);
    const tooBig = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: wrap(64 * 1024 + 1),
    });
    expect(tooBig.statusCode).toBe(413);
    expect(tooBig.json()).toMatchObject({ success: false, code: 'payload_too_large' });
  });

  it('malformed JSON is 400 invalid_payload and an unknown media type 415', async () => {
    const bad = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"a":',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'invalid_payload' });
    const media = await app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/x-unknown' },
      payload: 'x',
    });
    expect(media.statusCode).toBe(415);
    expect(media.json()).toMatchObject({ code: 'unsupported_media_type' });
  });

  it('every response carries a request id; a safe caller id is echoed, an unsafe one replaced', async () => {
    const generated = await app.inject({ method: 'GET', url: '/health' });
    expect(generated.headers['x-request-id']).toMatch(/^req_[A-Za-z0-9_-]{12}[0-9a-z]+$/);
    const next = await app.inject({ method: 'GET', url: '/health' });
    expect(next.headers['x-request-id']).not.toBe(generated.headers['x-request-id']);
    const echoed = await app.inject({
      method: 'GET',
      url: '/nope',
      headers: { 'x-request-id': 'trace-123' },
    });
    expect(echoed.headers['x-request-id']).toBe('trace-123');
    const unsafe = await app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': 'bad id\nwith newline'.replace('\n', ' ') },
    });
    expect(unsafe.headers['x-request-id']).toMatch(/^req_/);
  });

  it('access logs carry request id, status and latency, and never a key or signature', async () => {
    const key = 'svc_live_THIS_IS_A_SECRET_KEY_VALUE_1234567890';
    await app.inject({
      method: 'GET',
      url: '/health',
      headers: {
        'x-api-key': key,
        'x-service-signature': 'deadbeefsignature',
        'x-request-id': 'log-check',
      },
    });
    const line = logs.lines().find((l) => l.includes('"reqId":"log-check"'));
    expect(line).toBeDefined();
    const entry = JSON.parse(line!);
    expect(entry).toMatchObject({ method: 'GET', url: '/health', statusCode: 200 });
    expect(typeof entry.responseTimeMs).toBe('number');
    const all = logs.lines().join('\n');
    expect(all).not.toContain(key);
    expect(all).not.toContain('deadbeefsignature');
  });

  it('the logger redacts secret fields wherever they are logged', () => {
    const c = captureLogger();
    c.logger.info({ apiKey: 'k1', secret: 's1', nested: { secret: 's2', password: 'p1' } }, 'x');
    c.logger.info({ req: { headers: { 'x-api-key': 'k2', authorization: 'Bearer t' } } }, 'y');
    const text = c.lines().join('\n');
    for (const s of ['k1', 's1', 's2', 'p1', 'k2', 'Bearer t'])
      expect(text).not.toContain(`"${s}"`);
    expect(text).toContain('[redacted]');
  });

  it('every response matches the OpenAPI document, except the test-only routes', () => {
    // The /test/* routes are registered by this test: the served document picks them up, but with
    // no documented responses, so the check can only report "status N is not documented" for them.
    // Only those reports are left out; probes and unknown routes are validated.
    const testOnly = /^[A-Z]+ \/test\/[a-z-]+ → \d{3}: status \d{3} is not documented$/;
    expect(contract.checked()).toBeGreaterThan(0);
    expect(contract.violations().filter((v) => !testOnly.test(v))).toEqual([]);
  });
});

describe('graceful close', () => {
  it('finishes a request that is in flight when close() begins, then refuses new ones', async () => {
    const t = await freshDatabase('pglite');
    // No contract check here: the only route served is the test-only /test/slow, which has no
    // documented responses in the OpenAPI document.
    const app = await buildTestApp({ db: t.db });
    let entered: () => void = () => {};
    const inHandler = new Promise<void>((r) => {
      entered = r;
    });
    app.get('/test/slow', async () => {
      entered();
      await new Promise((r) => setTimeout(r, 300));
      return { success: true, data: 'done' };
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const pending = fetch(`${url}/test/slow`);
    await inHandler; // the request is now provably in flight
    const closing = app.close();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, data: 'done' });
    await closing;
    await expect(fetch(`${url}/health`)).rejects.toThrow();
    await t.drop();
  });
});

describe('readiness when the database is gone', () => {
  it('answers 503 in the envelope', async () => {
    const t = await freshDatabase('pglite');
    const app = await buildTestApp({ db: t.db });
    const contract = attachContractCheck(app);
    await t.drop(); // closes the database under the running app
    const res = await app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ success: false, code: 'service_unavailable' });
    await app.close();
    contract.assertClean();
    expect(contract.checked()).toBe(1);
  });
});

describe('readiness and the chain runtime', () => {
  it('answers 503 naming the chain runtime until it is up, then 200; 503 if it failed', async () => {
    const t = await freshDatabase('pglite');
    let provide: (chains: []) => void = () => {};
    const chains = new Promise<[]>((resolve) => {
      provide = resolve;
    });
    const app = await buildTestApp({ db: t.db, chains });
    const contract = attachContractCheck(app);
    const starting = await app.inject({ method: 'GET', url: '/ready' });
    expect(starting.statusCode).toBe(503);
    expect(starting.json()).toEqual({
      success: false,
      code: 'service_unavailable',
      message: 'The chain runtime is starting.',
    });
    expect(starting.headers['x-request-id']).toMatch(/^req_/);
    provide([]);
    await chains;
    const up = await app.inject({ method: 'GET', url: '/ready' });
    expect(up.statusCode).toBe(200);
    expect(up.json().data).toMatchObject({ status: 'ready', chains: 'ok' });
    await app.close();

    const failing = Promise.reject(new Error('anvil did not start'));
    failing.catch(() => {}); // handled by the app below; not an unhandled rejection meanwhile
    const broken = await buildTestApp({ db: t.db, chains: failing });
    const brokenContract = attachContractCheck(broken);
    await failing.catch(() => {});
    await new Promise((r) => setImmediate(r)); // the app's own handler has run
    const failed = await broken.inject({ method: 'GET', url: '/ready' });
    expect(failed.statusCode).toBe(503);
    expect(failed.json().message).toBe('The chain runtime failed to start.');
    await broken.close();
    contract.assertClean();
    brokenContract.assertClean();
    await t.drop();
  });
});

describe('readiness with Redis configured', () => {
  it.runIf(testRedisUrl())('reports redis ok when it answers', async () => {
    const t = await freshDatabase('pglite');
    const redis = createRedis(testRedisUrl()!, { keyPrefix: uniqueRedisPrefix() });
    const app = await buildTestApp({ db: t.db, redis });
    const contract = attachContractCheck(app);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    expect(res.json()).toMatchObject({ data: { redis: 'ok' } });
    await app.close();
    contract.assertClean();
    expect(contract.checked()).toBe(1);
    await redis.quit();
    await t.drop();
  });

  it('answers 503 when Redis does not answer (a loopback port with nothing listening)', async () => {
    const t = await freshDatabase('pglite');
    const redis = createRedis(`redis://127.0.0.1:${await deadPort()}`);
    redis.on('error', () => {}); // connection refusals are the point of this test
    const app = await buildTestApp({ db: t.db, redis });
    const contract = attachContractCheck(app);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ success: false, code: 'service_unavailable' });
    await app.close();
    contract.assertClean();
    expect(contract.checked()).toBe(1);
    redis.disconnect();
    await t.drop();
  });
});
