/** The OpenAPI document: generated from the route schemas, complete, and rendered at /docs. */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type NewProduct, type ProductStatus } from '../../src/db/products.ts';
import { ERROR_CATALOGUE } from '../../src/http/errors.ts';
import { DecimalString, Ok } from '../../src/http/schemas.ts';
import type { buildApp } from '../../src/server/app.ts';
import { address, buildTestApp, newProduct } from '../helpers/builders.ts';
import { attachContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { headingAnchors } from '../helpers/markdown.ts';

describe('OpenAPI document', () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let doc: {
    openapi: string;
    info: { description: string };
    externalDocs?: { url: string; description?: string };
    paths: Record<
      string,
      Record<string, { security?: unknown; responses: Record<string, unknown> }>
    >;
    components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
  };
  beforeAll(async () => {
    t = await freshDatabase('pglite');
    app = await buildTestApp({ db: t.db });
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

  it('links to the partner guide, which the service serves beside the reference', async () => {
    // Absolute for the linters, on the local service as `servers` is; the description links by path.
    expect(doc.externalDocs?.url).toBe('http://127.0.0.1:3000/docs/partner-guide.md');
    expect(doc.info.description).toContain('[partner guide](/docs/partner-guide.md)');
    const res = await app.inject({ url: new URL(doc.externalDocs!.url).pathname });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/markdown');
    // The file as it is, but for the targets of links the service serves elsewhere.
    const withoutTargets = (text: string) => text.replace(/\]\([^)\s]+\)/g, ']()');
    expect(withoutTargets(res.body)).toBe(
      withoutTargets(readFileSync(new URL('../../docs/partner-guide.md', import.meta.url), 'utf8')),
    );
  });

  it('every link of the served guide answers, followed to the end, and every anchor is a heading', async () => {
    const pages = new Map<string, string>();
    const problems: string[] = [];
    const queue = ['/docs/partner-guide.md'];
    const fetched = new Set(queue);
    const links: { from: string; url: URL }[] = [];
    while (queue.length > 0) {
      const at = queue.shift()!;
      const res = await app.inject({ url: at });
      if (res.statusCode !== 200) {
        problems.push(`${at}: ${res.statusCode}`);
        continue;
      }
      if (at.endsWith('.png')) {
        expect(res.headers['content-type']).toBe('image/png');
        expect(res.rawPayload.subarray(1, 4).toString()).toBe('PNG');
      }
      if (!at.endsWith('.md')) continue;
      expect(res.headers['content-type']).toContain('text/markdown');
      pages.set(at, res.body);
      for (const m of res.body.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(m[1]!)) continue;
        const url = new URL(m[1]!, `http://service${at}`);
        links.push({ from: at, url });
        if (!fetched.has(url.pathname)) {
          fetched.add(url.pathname);
          queue.push(url.pathname);
        }
      }
    }
    for (const { from, url } of links) {
      if (!url.hash) continue;
      const page = pages.get(url.pathname);
      if (!page || !headingAnchors(page).has(decodeURIComponent(url.hash.slice(1)))) {
        problems.push(`${from}: no heading for ${url.pathname}${url.hash}`);
      }
    }
    expect(problems).toEqual([]);
    // The reference, the webhooks pages, the SDK's README and the screenshots come with the guide;
    // the maintainers' pages do not.
    expect([...fetched]).toEqual(
      expect.arrayContaining([
        '/docs/partner-api.md',
        '/docs/webhooks-outbound.md',
        '/docs/webhooks-inbound.md',
        '/docs/webhooks-events.md',
        '/docs/sdk/README.md',
        '/docs/portal/keys-created.png',
      ]),
    );
    expect([...fetched].filter((p) => p.includes('maintainers'))).toEqual([]);
    expect((await app.inject({ url: '/docs/maintainers/decisions.md' })).statusCode).toBe(404);
  });

  it('the contract check flags a response that breaks its documented schema', async () => {
    const other = await buildTestApp({ db: t.db });
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

  it('documents for each product route exactly the codes it answers', async () => {
    // The documented codes come from the routes' declarations (config.serves, errorCodes); the
    // answered ones are observed here by driving every product route with products in every state,
    // another partner's and the other environment's slugs, bad keys and a bad value of each query
    // parameter. A declaration that disagrees with what the handler does fails here.
    const db = (await freshDatabase('pglite')) as TestDatabase;
    const A = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as `0x${string}`;
    const NON_EVM = 990_001;
    const probe = await buildTestApp({
      db: db.db,
      // A non-EVM chain (position: chain_not_supported); 31337 is not configured, so a live read
      // there answers chain_rpc_unavailable.
      chains: [
        {
          chainId: NON_EVM,
          name: 'non-evm',
          evm: false,
          client: createChainClient({ chainId: NON_EVM, rpcUrls: ['http://127.0.0.1:9'] }),
        },
      ],
    });
    try {
      const partners = createPartnersRepo(db.db);
      const acme = await partners.create('Acme Wallet');
      const bravo = await partners.create('Bravo Pay');
      const products = createProductsRepo(db.db);
      const product = (
        slug: string,
        partnerId: string,
        env: 'live' | 'test',
        status: ProductStatus,
        n: number,
        chainId = 31337,
      ): NewProduct =>
        newProduct({
          partnerId,
          environment: env,
          slug,
          displayName: slug,
          chainId,
          underlyingVaultAddress: address(1000 + n),
          assetAddress: address(7),
          serviceFeeBps: 150,
          partnerFeeBps: 250,
          serviceFeeRecipient: address(8),
          partnerFeeRecipient: address(9),
          ...(status === 'pending_deploy'
            ? {}
            : {
                deployed: {
                  engineAddress: A(n),
                  shareDecimals: 6,
                  block: 1n,
                  at: new Date('2026-01-01T00:00:00Z'),
                  status,
                },
              }),
        });
      const statuses: ProductStatus[] = ['pending_deploy', 'active', 'paused', 'deprecated'];
      for (const [i, status] of statuses.entries()) {
        await products.create(
          product(`p-${status.replace('_', '-')}`, acme.id, 'live', status, i + 1),
        );
      }
      await products.create(product('p-non-evm', acme.id, 'live', 'active', 11, NON_EVM));
      await products.create(product('p-sandbox', acme.id, 'test', 'active', 12));
      await products.create(product('p-bravo', bravo.id, 'live', 'active', 13));
      const keys = createApiKeysRepo(db.db);
      const live = (await keys.create(acme.id, 'live')).key;
      const revoked = await keys.create(acme.id, 'live');
      await keys.revoke(revoked.record.id);
      await probe.ready();
      const probeDoc = (await probe.inject({ url: '/openapi.json' })).json() as typeof doc;

      const slugs = [
        ...statuses.map((s) => `p-${s.replace('_', '-')}`),
        'p-non-evm',
        'p-sandbox',
        'p-bravo',
        'p-unknown',
        'x'.repeat(300),
      ];
      // A good and a bad value of each query parameter the document names (by name).
      const values: Record<string, string[]> = {
        days: ['7', 'abc'],
        amount: ['100', 'abc'],
        apy_window: ['7d', 'weekly'],
        address: [A(77), 'nope'],
        start_date: ['2026-01-01', 'nope', '2020-01-01'],
        end_date: ['2026-01-31', '2026-13-40'],
      };
      const productRoutes = Object.keys(probeDoc.paths).filter((p) =>
        p.startsWith('/api/partner/products/{slug}'),
      );
      expect(productRoutes.length).toBeGreaterThanOrEqual(6);
      for (const path of productRoutes) {
        const op = probeDoc.paths[path]!.get as unknown as {
          parameters?: { name: string; in: string }[];
          responses: Record<
            string,
            { content?: Record<string, { schema: Record<string, unknown> }> }
          >;
        };
        const names = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
        for (const name of names) expect(values[name], `${path} ?${name}`).toBeDefined();
        // Every query: all parameters good, then each one bad (the others good), then every pair.
        const good = Object.fromEntries(names.map((n) => [n, values[n]![0]!]));
        const queries: Record<string, string>[] = [good];
        for (const n of names) {
          for (const v of values[n]!.slice(1)) queries.push({ ...good, [n]: v });
        }
        const observed = new Set<string>();
        const ask = async (slug: string, query: Record<string, string>, key?: string) => {
          const qs = new URLSearchParams(query).toString();
          const res = await probe.inject({
            url: `${path.replace('{slug}', slug)}${qs ? `?${qs}` : ''}`,
            headers: key === undefined ? {} : { 'x-api-key': key },
          });
          if (res.statusCode >= 400) observed.add(res.json().code);
        };
        for (const slug of slugs) for (const q of queries) await ask(slug, q, live);
        await ask('p-active', good);
        await ask('p-active', good, 'pk_live_not_a_key');
        await ask('p-active', good, revoked.key);
        // Text PostgreSQL refuses, in the query (src/http/text-check.ts).
        await ask('p-active', { ...good, note: '\0' }, live);

        const documented = new Set<string>();
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const schema = response.content?.['application/json']?.schema as {
            allOf?: { properties?: { code?: { enum?: string[] } } }[];
          };
          const narrowed = schema.allOf?.[1]?.properties?.code?.enum;
          expect(narrowed, `${path} ${status}`).toBeDefined();
          for (const code of narrowed!) documented.add(code);
        }
        // What no request can cause on purpose here: a budget spent, a bug, an outage (see
        // test/api/outages.test.ts; yield-calc answers service_unavailable for reasons of its own).
        documented.delete('rate_limited');
        documented.delete('internal_error');
        if (!observed.has('service_unavailable')) documented.delete('service_unavailable');
        expect([...observed].sort(), path).toEqual([...documented].sort());
      }
    } finally {
      await probe.close();
      await db.drop();
    }
  });
});
