/**
 * Every response the service can emit, whatever the path or the bytes, is the envelope
 * `{ success: false, code, message }` with the catalogue's status and an `x-request-id` (#14):
 * route errors, router errors (empty and over-long slugs), values the database would reject (a NUL
 * byte), and Node's parser refusals, which only a raw socket can send. 5xx answers are logged at
 * error level with the request id; credentials in URLs never reach the access log.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProductsRepo, type ProductStatus } from '../../src/db/products.ts';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/http/errors.ts';
import { buildApp } from '../../src/server/app.ts';
import { newProduct, partnerWithKey } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { rawRequest } from '../helpers/raw-http.ts';

const ADDR = '0x0000000000000000000000000000000000000001' as const;
const WALLET = '0x000000000000000000000000000000000000dEaD';

describe('the envelope on every path', () => {
  let t: TestDatabase;
  const logs = captureLogger();
  let app: Awaited<ReturnType<typeof buildApp>>;
  let contract: ContractCheck;
  let key: string;
  let port: number;

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    const { partner, key: created } = await partnerWithKey(t.db, 'Acme');
    key = created;
    const products = createProductsRepo(t.db);
    const statuses: ProductStatus[] = ['pending_deploy', 'active', 'paused', 'deprecated'];
    for (const [i, status] of statuses.entries()) {
      await products.create(
        newProduct({
          displayName: 'P',
          engineName: 'E',
          engineSymbol: 'E',
          underlyingVaultAddress: ADDR,
          assetAddress: ADDR,
          serviceFeeRecipient: ADDR,
          partnerFeeRecipient: ADDR,
          partnerId: partner.id,
          slug: `acme-${status.replace('_', '-')}`,
          ...(status === 'pending_deploy'
            ? {}
            : {
                deployed: {
                  engineAddress: `0x${String(i + 10).padStart(40, '0')}` as `0x${string}`,
                  shareDecimals: 12,
                  block: 1n,
                  at: new Date(),
                  status,
                },
              }),
        }),
      );
    }
    app = await buildApp({ db: t.db, logger: logs.logger });
    contract = attachContractCheck(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
    contract.assertClean();
  });

  const get = (url: string, headers: Record<string, string> = { 'x-api-key': key }) =>
    app.inject({ method: 'GET', url, headers });

  /** The envelope with the catalogue's status for `code`, and a request id. */
  const expectEnvelope = (
    res: { statusCode?: number; status?: number; headers: Record<string, unknown>; body: string },
    code: ErrorCode,
  ) => {
    expect(res.statusCode ?? res.status, res.body).toBe(ERROR_CATALOGUE[code].status);
    expect(JSON.parse(res.body)).toEqual({ success: false, code, message: expect.any(String) });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  };

  it.each([
    '/api/partner/products/',
    '/api/partner/products//health',
    '/api/partner/products//yield-calc?amount=1',
    '/api/partner/products//apy-history',
    '/api/partner/products//fee-stats',
    `/api/partner/products//position?address=${WALLET}`,
  ])('an empty slug answers 404 not_found: %s', async (url) => {
    expectEnvelope(await get(url), 'not_found');
  });

  it.each([101, 150, 200, 201, 5000])(
    'a %i-character slug answers 404 not_found, after the key check',
    async (n) => {
      const slug = 'a'.repeat(n);
      for (const suffix of ['', '/health', '/yield-calc?amount=1', '/apy-history']) {
        expectEnvelope(await get(`/api/partner/products/${slug}${suffix}`), 'not_found');
        expectEnvelope(await get(`/api/partner/products/${slug}${suffix}`, {}), 'missing_api_key');
      }
    },
  );

  it.each(['%00', 'acme-active%00', '%01x', 'acme%20active', '%E2%82%AC', '%FF'])(
    'a slug no product can have (%s) answers 404 without reaching the database',
    async (slug) => {
      expectEnvelope(await get(`/api/partner/products/${slug}`), 'not_found');
      expectEnvelope(await get(`/api/partner/products/${slug}/fee-stats`), 'not_found');
    },
  );

  it('yield-calc checks the amount against asset_decimals before the product state', async () => {
    const sevenPlaces = '1.1234567';
    for (const slug of ['acme-paused', 'acme-deprecated', 'acme-pending-deploy', 'acme-active']) {
      const res = await get(`/api/partner/products/${slug}/yield-calc?amount=${sevenPlaces}`);
      expectEnvelope(res, 'invalid_amount');
      expect(res.json().message).toContain('6 decimal places');
    }
    // A valid amount then meets the state rule.
    expectEnvelope(
      await get('/api/partner/products/acme-paused/yield-calc?amount=1.5'),
      'product_paused',
    );
    expectEnvelope(
      await get('/api/partner/products/acme-deprecated/yield-calc?amount=1.5'),
      'product_deprecated',
    );
    expectEnvelope(
      await get('/api/partner/products/acme-pending-deploy/yield-calc?amount=1.5'),
      'engine_not_deployed',
    );
  });

  it('logs a 5xx at error level with its request id', async () => {
    const res = await get('/api/partner/products/acme-paused/yield-calc?amount=1');
    expect(res.statusCode).toBe(503);
    const id = res.headers['x-request-id'] as string;
    const line = logs.lines().find((l) => l.includes(id) && l.includes('request completed'));
    expect(line, 'access line of the 503').toBeDefined();
    expect(JSON.parse(line!).level).toBe(50);
    // A 4xx stays at info.
    const notFound = await get('/api/partner/products/nope');
    const nfLine = logs.lines().find((l) => l.includes(notFound.headers['x-request-id'] as string));
    expect(JSON.parse(nfLine!).level).toBe(30);
  });

  it('never writes a credential from the URL into the access log', async () => {
    const secret = `svc_live_${'Z'.repeat(43)}`;
    for (const q of ['api_key', 'API_KEY', 'api%5Fkey', 'x-api-key', 'token', 'key']) {
      const res = await get(`/api/partner/products?a=1&${q}=${secret}&b=2`);
      const line = logs.lines().find((l) => l.includes(res.headers['x-request-id'] as string));
      expect(line).toContain('[redacted]');
      expect(line).toContain('a=1');
      expect(line).toContain('b=2');
    }
    expect(logs.lines().join('\n')).not.toContain(secret);
  });

  describe("Node's parser refusals, over a raw socket", () => {
    const cases: Array<[string, Buffer | string, ErrorCode]> = [
      [
        'raw UTF-8 bytes in the path',
        Buffer.concat([
          Buffer.from('GET /api/partner/products/caf'),
          Buffer.from([0xc3, 0xa9]),
          Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        ]),
        'malformed_request',
      ],
      [
        'a control character in a header',
        'GET /health HTTP/1.1\r\nHost: x\r\nX-Note: a\x01b\r\nConnection: close\r\n\r\n',
        'malformed_request',
      ],
      [
        'Content-Length: abc',
        'POST /api/partner/webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\nConnection: close\r\n\r\n',
        'malformed_request',
      ],
      [
        'both Content-Length and Transfer-Encoding',
        'POST /api/partner/webhooks/inbound HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
        'malformed_request',
      ],
      [
        'a 20 KiB header',
        `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\nConnection: close\r\n\r\n`,
        'headers_too_large',
      ],
      ['bytes that are not HTTP', 'HELLO\r\n\r\n', 'malformed_request'],
    ];
    it.each(cases)('%s', async (_name, bytes, code) => {
      const res = await rawRequest(port, bytes);
      expectEnvelope(res, code);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.body)));
      const id = res.headers['x-request-id'];
      expect(logs.lines().some((l) => l.includes(id!) && l.includes('HTTP parser'))).toBe(true);
    });

    it('a well-formed request on a raw socket still gets the route answer', async () => {
      const res = await rawRequest(
        port,
        'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toMatch(/^req_/);
    });
  });
});
