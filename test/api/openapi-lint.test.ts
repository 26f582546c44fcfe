/**
 * The served OpenAPI document (#14), fetched over HTTP from a listening app as a partner's tooling
 * fetches it: linted with Redocly's `recommended` rules and Spectral's `oas` ruleset (zero errors,
 * zero warnings; exceptions only with a written reason in test/helpers/openapi-lint-exceptions.ts),
 * and complete enough to generate a client: every operation has operationId, summary, description
 * and tags; the resources are named components; parameters and headers are declared.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { buildApp } from '../../src/server/app.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { lintOpenApi } from '../helpers/openapi-lint.ts';
import { REDOCLY_EXCEPTIONS, SPECTRAL_EXCEPTIONS } from '../helpers/openapi-lint-exceptions.ts';

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: Json;
}
interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security?: unknown[];
  parameters?: Parameter[];
  responses: Record<string, { headers?: Json; content?: { 'application/json': { schema: Json } } }>;
}
interface Doc {
  servers: unknown[];
  security: unknown[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json>; headers: Record<string, Json> };
  webhooks: Record<string, unknown>;
}

describe('the served OpenAPI document', { timeout: 120_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let doc: Doc;
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    app = await buildTestApp({ db: t.db });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const res = await fetch(`${url}/openapi.json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Doc;
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ path, method, op })),
    );

  it('lints clean: Redocly recommended and Spectral oas, no error and no warning', async () => {
    const report = await lintOpenApi(doc);
    const counts = {
      redocly: {
        errors: report.count('redocly', 'error'),
        warnings: report.count('redocly', 'warning'),
      },
      spectral: {
        errors: report.count('spectral', 'error'),
        warnings: report.count('spectral', 'warning'),
      },
    };
    console.log(`OpenAPI lint: ${JSON.stringify(counts)}`);
    expect(report.findings).toEqual([]);
    // Every exception carries its reason.
    for (const reason of [
      ...Object.values(REDOCLY_EXCEPTIONS),
      ...Object.values(SPECTRAL_EXCEPTIONS),
    ]) {
      expect(reason.length).toBeGreaterThan(20);
    }
  });

  it('the linters do find faults: a document stripped of its metadata fails both', async () => {
    const broken = structuredClone(doc) as unknown as Json;
    delete broken.servers;
    const paths = broken.paths as Doc['paths'];
    for (const ops of Object.values(paths)) {
      for (const op of Object.values(ops)) {
        delete (op as Partial<Operation>).operationId;
        delete (op as Partial<Operation>).tags;
      }
    }
    const report = await lintOpenApi(broken);
    expect(report.count('redocly', 'error') + report.count('redocly', 'warning')).toBeGreaterThan(
      0,
    );
    expect(report.count('spectral', 'warning')).toBeGreaterThan(0);
  });

  it('every operation has operationId, summary, description and tags; probes need no key', () => {
    const ids = new Set<string>();
    for (const { path, method, op } of operations()) {
      const where = `${method} ${path}`;
      expect(op.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
      expect(ids.has(op.operationId), `${where}: unique operationId`).toBe(false);
      ids.add(op.operationId);
      expect(op.summary.length, where).toBeGreaterThan(3);
      expect(op.description.length, where).toBeGreaterThan(20);
      expect(op.tags.length, where).toBeGreaterThan(0);
    }
    expect(ids.size).toBe(operations().length);
    expect(ids.size).toBeGreaterThanOrEqual(10);
    expect(doc.servers.length).toBeGreaterThan(0);
    expect(doc.security).toEqual([{ ApiKey: [] }]);
    expect(doc.paths['/health']?.get?.security).toEqual([]);
    expect(doc.paths['/ready']?.get?.security).toEqual([]);
  });

  it('names the resources as components and refers to them', () => {
    for (const name of [
      'Product',
      'LatestMetrics',
      'ApyHistoryRow',
      'FeeStatsRow',
      'YieldProjection',
      'Health',
      'Position',
      'InboundAck',
      'Error',
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
    const text = JSON.stringify(doc.paths);
    const refs = (name: string) => text.split(`"#/components/schemas/${name}"`).length - 1;
    expect(refs('Product')).toBe(2); // list and detail
    for (const name of ['ApyHistoryRow', 'FeeStatsRow', 'YieldProjection', 'Health', 'Position']) {
      expect(refs(name), name).toBe(1);
    }
    expect(refs('InboundAck')).toBe(1);
    expect(refs('Error')).toBeGreaterThan(30); // every error answer of every operation
    expect(JSON.stringify(doc.components.schemas.Product)).toContain(
      '"#/components/schemas/LatestMetrics"',
    );
    // No one-branch anyOf anywhere.
    const all = JSON.stringify(doc);
    for (const m of all.matchAll(/"anyOf":\[/g)) {
      const rest = all.slice(m.index! + 9);
      let depth = 0;
      let branches = 1;
      for (const ch of rest) {
        if (ch === '[' || ch === '{') depth++;
        else if (ch === ']' || ch === '}') {
          if (depth === 0) break;
          depth--;
        } else if (ch === ',' && depth === 0) branches++;
      }
      expect(branches).toBeGreaterThan(1);
    }
  });

  it('declares required parameters, days as an integer enum and dates as dates', () => {
    const param = (path: string, name: string) =>
      doc.paths[path]?.get?.parameters?.find((p) => p.name === name);
    expect(param('/api/partner/products/{slug}/yield-calc', 'amount')?.required).toBe(true);
    expect(param('/api/partner/products/{slug}/position', 'address')?.required).toBe(true);
    expect(param('/api/partner/products/{slug}/apy-history', 'days')?.schema).toMatchObject({
      type: 'integer',
      enum: [7, 30, 180],
    });
    for (const name of ['start_date', 'end_date']) {
      expect(param('/api/partner/products/{slug}/fee-stats', name)?.schema).toMatchObject({
        type: 'string',
        format: 'date',
      });
    }
    for (const row of ['ApyHistoryRow', 'FeeStatsRow']) {
      expect((doc.components.schemas[row]!.properties as Json).date).toMatchObject({
        format: 'date',
      });
    }
  });

  it('declares the response headers: request id, budget, Retry-After, Cache-Control', () => {
    expect(Object.keys(doc.components.headers).sort()).toEqual(
      [
        'CacheControl',
        'RateLimitLimit',
        'RateLimitRemaining',
        'RateLimitReset',
        'RequestId',
        'RetryAfter',
      ].sort(),
    );
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const where = `${method} ${path} ${status}`;
        const headers = response.headers ?? {};
        expect(headers['x-request-id'], where).toBeDefined();
        if (path.startsWith('/api/') && status !== '401') {
          expect(headers['RateLimit-Remaining'], where).toBeDefined();
        }
        if (status === '429') expect(headers['Retry-After'], where).toBeDefined();
        if (status === '200' && path.startsWith('/api/')) {
          expect(headers['Cache-Control'], where).toBeDefined();
        }
      }
    }
    expect(
      doc.paths['/api/partner/products/{slug}/yield-calc']?.get?.responses['503']?.headers?.[
        'Retry-After'
      ],
    ).toBeDefined();
  });
});
