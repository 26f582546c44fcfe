/** The OpenAPI document: generated from the route schemas, complete, and rendered at /docs. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.ts';
import { ERROR_CATALOGUE } from '../../src/api/errors.ts';
import { DecimalString, Ok } from '../../src/api/schemas.ts';
import { attachContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

describe('OpenAPI document', () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let doc: {
    openapi: string;
    info: { description: string };
    paths: Record<
      string,
      Record<string, { security?: unknown; responses: Record<string, unknown> }>
    >;
    components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
  };
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    app = await buildApp({ db: t.db, logger: captureLogger().logger });
    await app.ready();
    doc = (await app.inject({ url: '/openapi.json' })).json();
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  it('is OpenAPI 3.1 with every partner endpoint of the spec', () => {
    expect(doc.openapi).toBe('3.1.0');
    for (const path of [
      '/health',
      '/api/partner/products',
      '/api/partner/products/{slug}',
      '/api/partner/products/{slug}/fee-stats',
      '/api/partner/products/{slug}/apy-history',
      '/api/partner/products/{slug}/yield-calc',
      '/api/partner/products/{slug}/health',
      '/api/partner/products/{slug}/position',
    ]) {
      expect(doc.paths[path]?.get, path).toBeDefined();
    }
  });

  it('documents every error code of the catalogue', () => {
    const text = JSON.stringify(doc);
    for (const code of Object.keys(ERROR_CATALOGUE)) {
      expect(text, code).toContain(`"${code}"`);
      expect(doc.info.description, code).toContain(`\`${code}\``);
    }
  });

  it('asks every partner route for the X-Api-Key header and documents the key errors', () => {
    expect(doc.components.securitySchemes.ApiKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-Api-Key',
    });
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/partner/')) continue;
      const operations = Object.values(ops);
      expect(operations.length, path).toBeGreaterThan(0);
      for (const op of operations) {
        expect(op?.security, path).toEqual([{ ApiKey: [] }]);
        for (const status of ['200', '401', '429', '500']) {
          expect(op?.responses[status], `${path} ${status}`).toBeDefined();
        }
      }
    }
    expect(doc.paths['/api/partner/webhooks/inbound']?.post).toBeDefined();
    expect(doc.paths['/health']?.get?.security).toEqual([]); // the probes need no key
  });

  it('renders a reference at /docs', async () => {
    const res = await app.inject({ url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('swagger');
  });

  it('the contract check flags a response that breaks its documented schema', async () => {
    const other = await buildApp({ db: t.db, logger: captureLogger().logger });
    // The serializer passes a string through, so only the independent check can see the breach.
    other.get(
      '/test/amount',
      { schema: { response: { 200: Ok(DecimalString('an amount')) } } },
      async () => ({
        success: true as const,
        data: '1e-7',
      }),
    );
    const contract = attachContractCheck(other);
    await other.ready();
    await other.inject({ url: '/test/amount' });
    await other.inject({ url: '/health' });
    expect(contract.checked()).toBe(2);
    expect(contract.violations()).toHaveLength(1);
    expect(contract.violations()[0]).toContain('GET /test/amount → 200');
    expect(() => contract.assertClean()).toThrow(/off the OpenAPI document/);
    await other.close();
  });
});
