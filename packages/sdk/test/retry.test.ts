/**
 * The retry policy against a real local HTTP server that answers by script: attempt counts, the
 * waits chosen (the client's sleep is injected, so a 16 s back-off costs nothing), which failures
 * are final, timeouts, lost connections, aborts, and the exact bytes and Idempotency-Key that a
 * retried inbound event sends again.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  type ClientOptions,
  ConnectionError,
  PartnerYieldClient,
  type RetryInfo,
  SDK_VERSION,
} from '../src/index.ts';

type Reply = (req: IncomingMessage, res: ServerResponse) => void;
const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Reply =>
  (_req, res) => {
    res.writeHead(status, {
      'content-type': 'application/json',
      'x-request-id': `req_${status}`,
      ...headers,
    });
    res.end(JSON.stringify(body));
  };
const fail = (status: number, code: string, headers?: Record<string, string>) =>
  json(status, { success: false, code, message: `${code} message` }, headers);
const ok = json(200, { success: true, data: [] });

let server: Server;
let baseUrl: string;
let script: Reply[];
let seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }>;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const next = script.shift();
      if (next) next(req, res);
      else fail(500, 'internal_error')(req, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  script = [];
  seen = [];
});

/** A client whose waits are recorded, not slept; jitter draws 0.5 (so 1 s of the 0–2 s). */
function clientWith(options: Partial<ClientOptions> = {}) {
  const waits: number[] = [];
  const retries: RetryInfo[] = [];
  const client = new PartnerYieldClient({
    baseUrl,
    apiKey: 'svc_test_key',
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
    onRetry: (info) => retries.push(info),
    ...options,
  });
  return { client, waits, retries };
}

describe('retry policy', () => {
  it('retries a 5xx with 1, 2, 4, 8 s waits and answers the fifth attempt', async () => {
    script = [
      fail(500, 'internal_error'),
      fail(502, 'internal_error'),
      fail(503, 'service_unavailable'),
      fail(500, 'internal_error'),
      ok,
    ];
    const { client, waits, retries } = clientWith();
    await expect(client.listProducts()).resolves.toEqual([]);
    expect(seen).toHaveLength(5);
    expect(waits).toEqual([1000, 2000, 4000, 8000]);
    expect(retries.map((r) => [r.attempt, r.delayMs, r.error.code, r.method, r.path])).toEqual([
      [1, 1000, 'internal_error', 'GET', '/api/partner/products'],
      [2, 2000, 'internal_error', 'GET', '/api/partner/products'],
      [3, 4000, 'service_unavailable', 'GET', '/api/partner/products'],
      [4, 8000, 'internal_error', 'GET', '/api/partner/products'],
    ]);
  });

  it('gives up after 5 attempts with the last typed error', async () => {
    script = Array.from({ length: 6 }, () => fail(500, 'internal_error'));
    const { client, waits } = clientWith();
    const err = await client.getProduct('core').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      status: 500,
      code: 'internal_error',
      message: 'internal_error message',
      requestId: 'req_500',
    });
    expect(seen).toHaveLength(5);
    expect(waits).toEqual([1000, 2000, 4000, 8000]);
  });

  it('waits 16 s before a sixth attempt when allowed six', async () => {
    script = Array.from({ length: 6 }, () => fail(500, 'internal_error'));
    const { client, waits } = clientWith({ retry: { maxAttempts: 6 } });
    await expect(client.listProducts()).rejects.toBeInstanceOf(ApiError);
    expect(seen).toHaveLength(6);
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16000]);
  });

  it('waits Retry-After plus jitter on a 429', async () => {
    script = [
      fail(429, 'rate_limited', { 'retry-after': '3' }),
      fail(429, 'rate_limited', { 'retry-after': '0' }),
      ok,
    ];
    const { client, waits } = clientWith();
    await client.listProducts();
    expect(waits).toEqual([3000 + 1000, 0 + 1000]);
  });

  it('keeps the jitter within 0 to 2 s', async () => {
    script = [
      fail(429, 'rate_limited', { 'retry-after': '1' }),
      fail(429, 'rate_limited', { 'retry-after': '1' }),
      ok,
    ];
    const draws = [0, 0.999999];
    const { client, waits } = clientWith({ random: () => draws.shift()! });
    await client.listProducts();
    expect(waits).toEqual([1000, 3000]);
  });

  it('reads a Retry-After given as an HTTP date', async () => {
    const now = Date.parse('2026-11-22T20:00:00Z');
    script = [fail(429, 'rate_limited', { 'retry-after': 'Sun, 22 Nov 2026 20:00:07 GMT' }), ok];
    const { client, waits } = clientWith({ now: () => now });
    await client.listProducts();
    expect(waits).toEqual([7000 + 1000]);
  });

  it('backs off exponentially from 2 s on a 429 without Retry-After', async () => {
    script = [fail(429, 'rate_limited'), fail(429, 'rate_limited'), fail(429, 'rate_limited'), ok];
    const { client, waits } = clientWith();
    await client.listProducts();
    expect(waits).toEqual([2000 + 1000, 4000 + 1000, 8000 + 1000]);
  });

  it('honours Retry-After on a 503 too (a storage outage says 5 s; the back-off would say 1 s)', async () => {
    script = [fail(503, 'service_unavailable', { 'retry-after': '3' }), ok];
    const { client, waits } = clientWith();
    await client.listProducts();
    expect(waits).toEqual([3000 + 1000]);
  });

  it('does not retry a 503 whose Retry-After is past the longest wait: "not yet" (yield-calc before the day closes)', async () => {
    script = [fail(503, 'service_unavailable', { 'retry-after': '41000' }), ok];
    const { client, waits } = clientWith();
    const err = await client.calculateYield('core', { amount: '1' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 503, code: 'service_unavailable', retryAfter: '41000' });
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('spreads the 5xx back-off by ±20 % at random (jitter)', async () => {
    script = [fail(500, 'internal_error'), fail(500, 'internal_error'), ok];
    const draws = [0, 0.999999];
    const { client, waits } = clientWith({ random: () => draws.shift()! });
    await client.listProducts();
    expect(waits).toEqual([800, 2400]);
  });

  it('sends a User-Agent naming the SDK, its version and the runtime', async () => {
    script = [ok];
    const { client } = clientWith();
    await client.listProducts();
    expect(seen[0]?.headers['user-agent']).toBe(
      `partner-yield-sdk/${SDK_VERSION} node/${process.versions.node}`,
    );
    expect(SDK_VERSION).toBe(
      JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version,
    );
  });

  it('waits 30 s after chain_rpc_unavailable', async () => {
    script = [fail(503, 'chain_rpc_unavailable'), fail(503, 'chain_rpc_unavailable'), ok];
    const { client, waits } = clientWith();
    await client.getPosition('core', '0x0000000000000000000000000000000000000001');
    expect(waits).toEqual([30_000, 30_000]);
  });

  it.each([
    [400, 'invalid_address'],
    [401, 'invalid_api_key'],
    [403, 'not_owned'],
    [404, 'not_found'],
    [409, 'engine_not_deployed'],
    [410, 'product_deprecated'],
  ])('never retries a %i (%s)', async (status, code) => {
    script = [fail(status, code), ok];
    const { client, waits } = clientWith();
    const err = await client.getPosition('core', 'nope').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status, code, requestId: `req_${status}` });
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it('does not retry product_paused (a 503 that lasts until an operator acts), unless configured to', async () => {
    script = [fail(503, 'product_paused'), ok];
    const { client, waits } = clientWith();
    await expect(client.calculateYield('boost', { amount: '1' })).rejects.toMatchObject({
      code: 'product_paused',
      status: 503,
    });
    expect(waits).toEqual([]);
    script = [fail(503, 'product_paused'), ok];
    const retrying = clientWith({ retry: { noRetryCodes: [] } });
    await retrying.client.listProducts();
    expect(retrying.waits).toEqual([1000]);
  });

  it('treats an answer that is not the envelope as unexpected_response, retried when 5xx', async () => {
    const html: Reply = (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    };
    script = [html, ok];
    const { client, waits } = clientWith();
    await client.listProducts();
    expect(waits).toEqual([1000]);
    script = [html];
    const err = await clientWith({ retry: { maxAttempts: 1 } })
      .client.listProducts()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unexpected_response', status: 502 });
  });

  it('reports a redirect as a final unexpected_response naming where it points, never followed', async () => {
    // Found by QA: with fetch's redirect: 'error' a 303 from a wrong baseUrl (or an http→https
    // proxy) was "Could not reach …", a connection_failed retried for about 15 s.
    const redirect: Reply = (_req, res) => {
      res.writeHead(303, { location: '/portal/sign-in', 'x-request-id': 'req_303' });
      res.end();
    };
    script = [redirect, ok];
    const { client, waits } = clientWith();
    const err = await client.listProducts().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'unexpected_response', status: 303, requestId: 'req_303' });
    expect((err as Error).message).toContain('redirect (303 to /portal/sign-in)');
    expect(waits).toEqual([]);
    // One request: the redirect was not followed with the key.
    expect(seen).toHaveLength(1);
  });

  it('times out an attempt and retries it like a 5xx', async () => {
    const silent: Reply = () => {}; // never answers
    script = [silent, silent];
    const { client, waits } = clientWith({ timeoutMs: 100, retry: { maxAttempts: 2 } });
    const err = await client.listProducts().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err).toMatchObject({ code: 'timeout', status: undefined });
    expect(seen).toHaveLength(2);
    expect(waits).toEqual([1000]);
  });

  it('reports a refused connection as connection_failed after its retries', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    const { client, waits } = clientWith({
      baseUrl: `http://127.0.0.1:${port}`,
      retry: { maxAttempts: 3 },
    });
    await expect(client.listProducts()).rejects.toMatchObject({ code: 'connection_failed' });
    expect(waits).toEqual([1000, 2000]);
  });

  it('stops at once when the caller aborts, even during a wait', async () => {
    script = [fail(500, 'internal_error'), ok];
    const controller = new AbortController();
    const { client } = clientWith({
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason));
          controller.abort();
        }),
    });
    await expect(client.listProducts({ signal: controller.signal })).rejects.toMatchObject({
      code: 'aborted',
    });
    expect(seen).toHaveLength(1);
  });

  it('sleeps for real by default', async () => {
    script = [fail(500, 'internal_error'), ok];
    const client = new PartnerYieldClient({
      baseUrl,
      apiKey: 'k',
      retry: { serverErrorBaseMs: 50 },
    });
    const started = performance.now();
    await client.listProducts();
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(seen).toHaveLength(2);
  });

  it('resends an inbound event with the same bytes, signature and Idempotency-Key', async () => {
    script = [
      fail(503, 'service_unavailable'),
      json(200, { success: true, event_id: 7, duplicate: false }),
    ];
    const { client } = clientWith({ inboundSecret: 'whsec_test' });
    const ack = await client.sendInbound({ type: 'ping', data: { hello: 'world' } });
    expect(ack).toEqual({ success: true, event_id: 7, duplicate: false });
    expect(seen).toHaveLength(2);
    const [first, second] = seen as [(typeof seen)[0], (typeof seen)[0]];
    expect(second.body).toBe(first.body);
    for (const h of ['idempotency-key', 'x-service-signature', 'x-service-event', 'x-api-key']) {
      expect(second.headers[h], h).toBe(first.headers[h]);
    }
    expect(first.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
