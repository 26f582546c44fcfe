/**
 * A partner's generated client (#14): openapi-typescript turns the document the service serves into
 * types, and a small consumer calls every operation through openapi-fetch; `tsc` type-checks it in
 * a temporary project. The consumer also holds calls the types must refuse (`@ts-expect-error`: a
 * missing `amount` or `address`, `days` outside 7/30/180), so loose types fail the test too, and
 * the test fails when the document has an operation the consumer does not call.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type * as OpenapiTypescript from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importTool, toolRequire } from '../../scripts/tools.mjs';
import type { buildApp } from '../../src/server/app.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * A typed call of every documented GET operation the consumer above does not call by hand, so a
 * read endpoint added to the service is type-checked through the generated client too. Path
 * parameters get `x`; required query parameters a value of their documented type.
 */
function generatedCalls(
  doc: { paths: Record<string, Record<string, unknown>> },
  handWritten: string,
): string {
  const lines: string[] = [];
  for (const [p, ops] of Object.entries(doc.paths)) {
    const op = ops.get as
      | {
          parameters?: Array<{
            name: string;
            in: string;
            required?: boolean;
            schema?: { type?: string; enum?: unknown[] };
          }>;
        }
      | undefined;
    if (!op || handWritten.includes(`client.GET('${p}'`)) continue;
    const params = op.parameters ?? [];
    const value = (schema?: { type?: string; enum?: unknown[] }) =>
      JSON.stringify(schema?.enum?.[0] ?? (schema?.type === 'integer' ? 1 : 'x'));
    const pathParams = params.filter((q) => q.in === 'path').map((q) => `${q.name}: 'x'`);
    const query = params
      .filter((q) => q.in === 'query' && q.required)
      .map((q) => `${q.name}: ${value(q.schema)}`);
    const parts = [
      pathParams.length ? `path: { ${pathParams.join(', ')} }` : '',
      query.length ? `query: { ${query.join(', ')} }` : '',
    ].filter(Boolean);
    lines.push(
      `  await client.GET('${p}'${parts.length ? `, { params: { ${parts.join(', ')} } }` : ''});`,
    );
  }
  return `\nexport async function everyOtherRead() {\n${lines.join('\n')}\n}\n`;
}

const CONSUMER = `import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

type Schemas = components['schemas'];
const client = createClient<paths>({
  baseUrl: 'http://127.0.0.1:3000',
  headers: { 'X-Api-Key': 'svc_test_example' },
});
const slug = 'acme-live-usdc-core';

export async function everyOperation() {
  const liveness = await client.GET('/health');
  const ok: 'ok' | undefined = liveness.data?.data.status;

  const readiness = await client.GET('/ready');
  const ready: unknown = readiness.data;

  const list = await client.GET('/api/partner/products');
  const first: Schemas['Product'] | undefined = list.data?.data[0];
  const basis: 'engine' | 'underlying_estimate' | undefined = first?.latest_metrics?.apy_basis;
  const netApy: string | undefined = first?.latest_metrics?.net_apy_for_user;

  const detail = await client.GET('/api/partner/products/{slug}', {
    params: { path: { slug } },
  });
  const status: 'pending_deploy' | 'active' | 'paused' | 'deprecated' | undefined =
    detail.data?.data.status;

  const history = await client.GET('/api/partner/products/{slug}/apy-history', {
    params: { path: { slug }, query: { days: 7 } },
  });
  const row: Schemas['ApyHistoryRow'] | undefined = history.data?.data[0];
  const day: string | undefined = row?.date;

  const fees = await client.GET('/api/partner/products/{slug}/fee-stats', {
    params: { path: { slug }, query: { start_date: '2026-01-01', end_date: '2026-01-31' } },
  });
  const feeRow: Schemas['FeeStatsRow'] | undefined = fees.data?.data[0];
  const earned: string | undefined = feeRow?.daily_partner_fee_earned;

  const projection = await client.GET('/api/partner/products/{slug}/yield-calc', {
    params: { path: { slug }, query: { amount: '1000' } },
  });
  const annual: string | undefined = projection.data?.data.annual_yield;
  const projected: Schemas['YieldProjection'] | undefined = projection.data?.data;
  const code: Schemas['Error']['code'] | undefined = projection.error?.code;

  const health = await client.GET('/api/partner/products/{slug}/health', {
    params: { path: { slug } },
  });
  const paused: boolean | undefined = health.data?.data.is_paused;
  const flags: Schemas['Health'] | undefined = health.data?.data;

  const position = await client.GET('/api/partner/products/{slug}/position', {
    params: { path: { slug }, query: { address: '0x0000000000000000000000000000000000000001' } },
  });
  const shares: string | undefined = position.data?.data.shares;
  const held: Schemas['Position'] | undefined = position.data?.data;

  const ack = await client.POST('/api/partner/webhooks/inbound', {
    params: {
      header: {
        'Idempotency-Key': 'delivery-1',
        'X-Service-Event': 'ping',
        'X-Service-Signature': '0'.repeat(64),
      },
    },
    body: { occurred_at: '2026-01-01T00:00:00Z', data: {} },
  });
  const duplicate: boolean | undefined = ack.data?.duplicate;
  const stored: Schemas['InboundAck'] | undefined = ack.data;

  // @ts-expect-error amount is required
  await client.GET('/api/partner/products/{slug}/yield-calc', { params: { path: { slug }, query: {} } });
  // @ts-expect-error address is required
  await client.GET('/api/partner/products/{slug}/position', { params: { path: { slug }, query: {} } });
  await client.GET('/api/partner/products/{slug}/apy-history', {
    // @ts-expect-error days is one of 7, 30, 180
    params: { path: { slug }, query: { days: 45 } },
  });

  return [ok, ready, basis, netApy, status, day, earned, annual, projected, code, paused, flags,
    shares, held, duplicate, stored];
}
`;

describe('a client generated from the served document', { timeout: 180_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let doc: { paths: Record<string, Record<string, unknown>> };
  const dir = mkdtempSync(path.join(tmpdir(), 'pys-client-'));
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    app = await buildTestApp({ db: t.db });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    doc = (await (await fetch(`${url}/openapi.json`)).json()) as typeof doc;
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('calls every operation', () => {
    const consumer = CONSUMER + generatedCalls(doc, CONSUMER);
    const documented = Object.entries(doc.paths)
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    const called = [...consumer.matchAll(/client\.(GET|POST|PUT|PATCH|DELETE)\('([^']+)'/g)]
      .map((m) => `${m[1]} ${m[2]}`)
      .filter((v, i, all) => all.indexOf(v) === i)
      .sort();
    expect(called).toEqual(documented);
  });

  it('type-checks with openapi-typescript and openapi-fetch', async () => {
    // The partner's toolchain (openapi-typescript, tsc) comes from tools/, installed on demand.
    const { default: openapiTS, astToString } =
      await importTool<typeof OpenapiTypescript>('openapi-typescript');
    const ast = await openapiTS(structuredClone(doc) as never);
    writeFileSync(path.join(dir, 'schema.ts'), astToString(ast));
    writeFileSync(path.join(dir, 'consumer.ts'), CONSUMER + generatedCalls(doc, CONSUMER));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          noUnusedLocals: false,
        },
        files: ['consumer.ts'],
      }),
    );
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const tsc = toolRequire().resolve('typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir }).then(
      () => ({ code: 0, out: '' }),
      (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? '' }),
    );
    expect(result.out).toBe('');
    expect(result.code).toBe(0);
  });
});
