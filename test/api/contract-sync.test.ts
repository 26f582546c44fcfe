/**
 * The partner contract is written once, in the route files; the OpenAPI document the service serves
 * is assembled from them, and what else states the contract is generated from that document and
 * checked here against the one served:
 * - the SDK's operation table and read methods (packages/sdk/src/generated/operations.ts): the same
 *   operations, methods and paths, and a client method for each;
 * - the endpoint table of the partner API reference (docs/partner-api.md, scripts/partner-endpoints.ts).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationRows, renderOperations } from '../../packages/sdk/scripts/operations.ts';
import { PartnerYieldClient } from '../../packages/sdk/src/client.ts';
import { OPERATIONS } from '../../packages/sdk/src/generated/operations.ts';
import { GUIDE, renderEndpointTable, withEndpointTable } from '../../scripts/partner-endpoints.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

describe('the contract, written once', () => {
  let t: TestDatabase;
  let document: Record<string, unknown>;
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    const app = await buildTestApp({ db: t.db });
    await app.ready();
    document = (await app.inject({ url: '/openapi.json' })).json();
    await app.close();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('the SDK calls every operation of the document, at its method and path', () => {
    const served = operationRows(document)
      .map((r) => ({ operationId: r.operationId, method: r.method, path: r.path }))
      .sort((a, b) => a.operationId.localeCompare(b.operationId));
    expect(served.length).toBeGreaterThanOrEqual(10);
    const sdk = Object.entries(OPERATIONS)
      .map(([operationId, op]) => ({ operationId, method: op.method, path: op.path }))
      .sort((a, b) => a.operationId.localeCompare(b.operationId));
    expect(sdk).toEqual(served);
    for (const op of Object.values(OPERATIONS)) {
      const method = (PartnerYieldClient.prototype as unknown as Record<string, unknown>)[
        op.clientMethod
      ];
      expect(typeof method, op.clientMethod).toBe('function');
    }
  });

  it("the partner guide's endpoint table is the document's", () => {
    const guide = readFileSync(GUIDE, 'utf8');
    // On a mismatch: npm run docs:endpoints
    expect(withEndpointTable(guide, renderEndpointTable(document))).toBe(guide);
  });

  it('an operation added to the document changes both (a deliberate failing example)', () => {
    const paths = document.paths as Record<string, unknown>;
    const grown = {
      ...document,
      paths: {
        ...paths,
        '/api/partner/products/{slug}/events': {
          get: {
            operationId: 'listProductEvents',
            summary: 'Product events',
            description: 'The events of one product, newest first.',
            parameters: [{ name: 'slug', in: 'path', required: true }],
            responses: {},
          },
        },
      },
    };
    const guide = readFileSync(GUIDE, 'utf8');
    const table = renderEndpointTable(grown);
    expect(withEndpointTable(guide, table)).not.toBe(guide);
    expect(table).toContain('`listProductEvents(slug)`');
    expect(renderOperations(grown)).toContain(
      "listProductEvents(slug: string, options?: RequestOptions): Promise<Data<'/api/partner/products/{slug}/events'>>",
    );
  });
});
