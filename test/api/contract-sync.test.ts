/**
 * The partner contract is written once, in the route files; everything else that states it is
 * checked against the OpenAPI document the service serves (assembled from those routes):
 * - the SDK's operation table (packages/sdk/src/operations.ts), from which its methods take their
 *   paths: the same operations, methods and paths, and a client method for each;
 * - the endpoint table of the partner guide (docs/partner-api.md): a row per operation, naming its
 *   SDK method.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartnerYieldClient } from '../../packages/sdk/src/client.ts';
import { OPERATIONS } from '../../packages/sdk/src/operations.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface DocOperation {
  operationId: string;
  method: string;
  path: string;
}

/** `METHOD /path` of every operation of a document, by operationId. */
function documentOperations(doc: {
  paths: Record<string, Record<string, { operationId?: string }>>;
}) {
  const ops: DocOperation[] = [];
  for (const [p, byMethod] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(byMethod)) {
      ops.push({ operationId: op.operationId ?? '(none)', method: method.toUpperCase(), path: p });
    }
  }
  return ops.sort((a, b) => a.operationId.localeCompare(b.operationId));
}

/** The rows of the guide's endpoint table: `METHOD /path` and the SDK method named beside it. */
function guideRows(markdown: string) {
  const section = markdown.slice(markdown.indexOf('## Endpoints'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| Method')));
  return table
    .split('\n')
    .map((line) => /^\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` +\| `(\w+)\(/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ method: m[1]!, path: m[2]!, clientMethod: m[3]! }))
    .sort((a, b) => `${a.method} ${a.path}`.localeCompare(`${b.method} ${b.path}`));
}

describe('the contract, written once', () => {
  let t: TestDatabase;
  let operations: DocOperation[];
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    const app = await buildTestApp({ db: t.db });
    await app.ready();
    operations = documentOperations((await app.inject({ url: '/openapi.json' })).json());
    await app.close();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('the SDK calls every operation of the document, at its method and path', () => {
    expect(operations.length).toBeGreaterThanOrEqual(10);
    const sdk = Object.entries(OPERATIONS)
      .map(([operationId, op]) => ({ operationId, method: op.method, path: op.path }))
      .sort((a, b) => a.operationId.localeCompare(b.operationId));
    expect(sdk).toEqual(operations);
    for (const op of Object.values(OPERATIONS)) {
      expect(typeof PartnerYieldClient.prototype[op.clientMethod], op.clientMethod).toBe(
        'function',
      );
    }
  });

  it("the partner guide's endpoint table lists every operation, with its SDK method", () => {
    const rows = guideRows(readFileSync(path.join(ROOT, 'docs/partner-api.md'), 'utf8'));
    const expected = operations
      .map((op) => ({
        method: op.method,
        path: op.path,
        clientMethod: OPERATIONS[op.operationId as keyof typeof OPERATIONS]?.clientMethod,
      }))
      .sort((a, b) => `${a.method} ${a.path}`.localeCompare(`${b.method} ${b.path}`));
    expect(rows).toEqual(expected);
  });

  it('a drifted table is caught (a deliberate failing example)', () => {
    const guide = readFileSync(path.join(ROOT, 'docs/partner-api.md'), 'utf8');
    const dropped = guide.replace(
      /\n\| `GET \/api\/partner\/products\/\{slug\}\/position`[^\n]*/,
      '',
    );
    expect(guideRows(dropped).length).toBe(guideRows(guide).length - 1);
  });
});
