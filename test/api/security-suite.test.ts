/**
 * One security suite, run on every authenticated route (Unkey's pattern, #13). The routes come from
 * the served OpenAPI document — every operation that declares the `ApiKey` scheme — so a new route
 * is covered without editing this file; a route with a required parameter this suite has no sample
 * for fails here until one is added.
 *
 * Per route: a missing, an invalid and a revoked key (401); per product route: another partner's
 * product (403), the caller's own product in the other environment (404), an empty and an
 * over-long slug (404); and the per-key budget: exactly 100 sandbox requests, then 429 with
 * Retry-After, RateLimit-* headers on every answer. Every answer is the envelope with a request id,
 * and the contract check fails any code a route answers without documenting it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RATE_LIMITS } from '../../src/api/partner-scope.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Environment } from '../../src/db/products.ts';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/http/errors.ts';
import type { buildApp } from '../../src/server/app.ts';
import { outboundPayload } from '../../src/webhooks/event-catalogue.ts';
import { buildTestApp, deployed, newProduct } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';

const ADDR = '0x0000000000000000000000000000000000000001' as const;

/** A valid value for each parameter a partner route takes; the request shape must pass. */
const SAMPLE_QUERY: Record<string, string> = {
  amount: '1',
  address: '0x000000000000000000000000000000000000dEaD',
  days: '7',
};

interface Operation {
  method: string;
  /** OpenAPI path, e.g. /api/partner/products/{slug}/health. */
  path: string;
  parameters: Array<{ name: string; in: string; required?: boolean }>;
  hasSlug: boolean;
}

type App = Awaited<ReturnType<typeof buildApp>>;

function authenticatedOperations(app: App): Operation[] {
  const doc = app.swagger() as unknown as {
    paths: Record<
      string,
      Record<
        string,
        {
          security?: Array<Record<string, unknown>>;
          parameters?: Operation['parameters'];
        }
      >
    >;
  };
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!op.security?.some((s) => 'ApiKey' in s)) continue;
      ops.push({
        method: method.toUpperCase(),
        path,
        parameters: op.parameters ?? [],
        hasSlug: path.includes('{slug}'),
      });
    }
  }
  return ops;
}

describe('the security suite, on every authenticated route', () => {
  let t: TestDatabase;
  let app: App;
  let contract: ContractCheck;
  const keys = {} as Record<'live' | 'revoked' | 'bravo', string>;
  let newSandboxKey: () => Promise<string>;
  let ops: Operation[];

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    const partners = createPartnersRepo(t.db);
    const acme = (await partners.create('Acme')).id;
    const bravo = (await partners.create('Bravo')).id;
    const keyRepo = createApiKeysRepo(t.db);
    keys.live = (await keyRepo.create(acme, 'live')).key;
    keys.bravo = (await keyRepo.create(bravo, 'live')).key;
    const revoked = await keyRepo.create(acme, 'live');
    await keyRepo.revoke(revoked.record.id);
    keys.revoked = revoked.key;
    newSandboxKey = async () => (await keyRepo.create(acme, 'test')).key;
    const products = createProductsRepo(t.db);
    const product = (partnerId: string, environment: Environment, slug: string, i: number) =>
      products.create(
        newProduct({
          displayName: 'P',
          engineName: 'E',
          engineSymbol: 'E',
          underlyingVaultAddress: ADDR,
          assetAddress: ADDR,
          serviceFeeRecipient: ADDR,
          partnerFeeRecipient: ADDR,
          partnerId,
          environment,
          slug,
          deployed: deployed(`0x${String(i).padStart(40, '0')}` as `0x${string}`, {
            shareDecimals: 12,
            at: new Date(),
          }),
        }),
      );
    await product(acme, 'live', 'acme-live', 11);
    await product(acme, 'test', 'acme-sandbox', 12);
    await product(bravo, 'live', 'bravo-live', 13);
    app = await buildTestApp({ db: t.db });
    contract = attachContractCheck(app);
    await app.ready();
    ops = authenticatedOperations(app);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  it('finds the partner routes in the served document, every one of them behind the key', () => {
    const paths = ops.map((o) => `${o.method} ${o.path}`);
    // A partner route registered outside the partner scope would declare no key: refuse it.
    const doc = app.swagger() as unknown as { paths: Record<string, Record<string, unknown>> };
    const partnerPaths = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/partner'))
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(paths.sort()).toEqual(partnerPaths.sort());
    // The suite must not silently run on nothing: these are the spec's routes.
    for (const p of [
      'GET /api/partner/products',
      'GET /api/partner/products/{slug}',
      'GET /api/partner/products/{slug}/yield-calc',
      'GET /api/partner/products/{slug}/apy-history',
      'GET /api/partner/products/{slug}/fee-stats',
      'GET /api/partner/products/{slug}/health',
      'GET /api/partner/products/{slug}/position',
      'POST /api/partner/webhooks/inbound',
      'GET /api/partner/events',
    ]) {
      expect(paths).toContain(p);
    }
  });

  /** The request for `op` with `slug` in the path and a valid sample for every query parameter. */
  const requestFor = (op: Operation, slug: string) => {
    const query = new URLSearchParams();
    for (const p of op.parameters) {
      if (p.in !== 'query') continue;
      const sample = SAMPLE_QUERY[p.name];
      if (sample !== undefined) query.set(p.name, sample);
      else if (p.required) throw new Error(`no sample value for ${p.name} of ${op.path}`);
    }
    const path = op.path.replace('{slug}', slug);
    const qs = query.toString();
    return { method: op.method as 'GET' | 'POST', url: qs ? `${path}?${qs}` : path };
  };

  // Failed authentication is limited per address (30 a minute): each batch of failures comes from
  // its own address, so the suite tests the key checks, not that limit (partner-scope.test does).
  let address = 0;
  const nextAddress = () => {
    address++;
    return `10.0.${address >> 8}.${address & 255}`;
  };
  let from = nextAddress();

  const send = (op: Operation, slug: string, key: string | undefined) =>
    app.inject({
      ...requestFor(op, slug),
      headers: key === undefined ? {} : { 'x-api-key': key },
      remoteAddress: from,
    });

  const expectEnvelope = (
    res: Awaited<ReturnType<typeof send>>,
    code: ErrorCode,
    where: string,
  ) => {
    expect(res.statusCode, `${where}: ${res.body}`).toBe(ERROR_CATALOGUE[code].status);
    expect(res.json(), where).toEqual({ success: false, code, message: expect.any(String) });
    expect(res.headers['x-request-id'], where).toMatch(/^req_/);
  };

  it('every route: missing, invalid and revoked keys answer 401', async () => {
    for (const op of ops) {
      const where = `${op.method} ${op.path}`;
      from = nextAddress();
      expectEnvelope(await send(op, 'acme-live', undefined), 'missing_api_key', where);
      expectEnvelope(await send(op, 'acme-live', ''), 'missing_api_key', where);
      expectEnvelope(
        await send(op, 'acme-live', `svc_live_${'Q'.repeat(43)}`),
        'invalid_api_key',
        where,
      );
      expectEnvelope(await send(op, 'acme-live', 'not-a-key'), 'invalid_api_key', where);
      expectEnvelope(await send(op, 'acme-live', keys.revoked), 'revoked_api_key', where);
    }
  });

  it("every product route: another partner's product answers 403 not_owned", async () => {
    for (const op of ops.filter((o) => o.hasSlug)) {
      const where = `${op.method} ${op.path}`;
      expectEnvelope(await send(op, 'bravo-live', keys.live), 'not_owned', where);
      // And the other way round.
      expectEnvelope(await send(op, 'acme-live', keys.bravo), 'not_owned', where);
    }
  });

  it("every product route: the caller's product in the other environment answers 404", async () => {
    const sandbox = await newSandboxKey();
    for (const op of ops.filter((o) => o.hasSlug)) {
      const where = `${op.method} ${op.path}`;
      expectEnvelope(await send(op, 'acme-sandbox', keys.live), 'not_found', where);
      expectEnvelope(await send(op, 'acme-live', sandbox), 'not_found', where);
    }
  });

  it("the events feed: another partner's or the other environment's events never appear", async () => {
    const events = createEventsRepo(t.db);
    const products = createProductsRepo(t.db);
    const stored = new Map<string, string>(); // event id → `${slug}`
    for (const slug of ['acme-live', 'acme-sandbox', 'bravo-live']) {
      const p = (await products.getBySlug(slug))!;
      const e = await events.insert({
        partnerId: p.partnerId,
        environment: p.environment,
        productId: p.id,
        eventType: 'vault_pause',
        dedupeKey: `security-suite:${slug}`,
        payload: outboundPayload('vault_pause', { slug, status: 'paused' }),
        occurredAt: new Date(),
      });
      stored.set(e!.id, slug);
    }
    const sandbox = await newSandboxKey();
    for (const [key, slug] of [
      [keys.live, 'acme-live'],
      [sandbox, 'acme-sandbox'],
      [keys.bravo, 'bravo-live'],
    ] as const) {
      for (const order of ['newest_first', 'oldest_first']) {
        const res = await app.inject({
          method: 'GET',
          url: `/api/partner/events?order=${order}&limit=100`,
          headers: { 'x-api-key': key },
        });
        expect(res.statusCode, res.body).toBe(200);
        const listed = (res.json().data.events as Array<{ id: string }>).map((e) => e.id);
        expect(listed.map((id) => stored.get(id))).toEqual([slug]);
      }
      // A product filter naming another partner's product is refused, as the product routes do.
      const other = await app.inject({
        method: 'GET',
        url: `/api/partner/events?product=${slug === 'bravo-live' ? 'acme-live' : 'bravo-live'}`,
        headers: { 'x-api-key': key },
      });
      expect(other.json().code).toBe('not_owned');
    }
  });

  it('every product route: an empty, an over-long or an impossible slug answers 404', async () => {
    for (const op of ops.filter((o) => o.hasSlug)) {
      const where = `${op.method} ${op.path}`;
      for (const slug of ['', 'a'.repeat(101), 'a'.repeat(201), 'a'.repeat(3000), 'acme-live%00']) {
        expectEnvelope(await send(op, slug, keys.live), 'not_found', `${where} [${slug.length}]`);
      }
      // The key is still checked first.
      from = nextAddress();
      expectEnvelope(await send(op, 'a'.repeat(300), undefined), 'missing_api_key', where);
    }
  });

  it('every route: exactly the sandbox budget, RateLimit headers on each answer, then 429', async () => {
    for (const op of ops) {
      const where = `${op.method} ${op.path}`;
      const key = await newSandboxKey(); // a fresh budget per route
      for (let i = 1; i <= RATE_LIMITS.test; i++) {
        const res = await send(op, 'acme-sandbox', key);
        expect(res.statusCode, `${where} #${i}: ${res.body}`).not.toBe(429);
        expect(res.headers['ratelimit-limit'], where).toBe(String(RATE_LIMITS.test));
        expect(res.headers['ratelimit-remaining'], where).toBe(String(RATE_LIMITS.test - i));
        expect(Number(res.headers['ratelimit-reset']), where).toBeGreaterThan(0);
      }
      const over = await send(op, 'acme-sandbox', key);
      expectEnvelope(over, 'rate_limited', where);
      expect(Number(over.headers['retry-after']), where).toBeGreaterThanOrEqual(1);
      expect(over.headers['ratelimit-remaining'], where).toBe('0');
    }
  });

  it('every answer above matched the document', () => {
    expect(contract.checked()).toBeGreaterThan(ops.length * RATE_LIMITS.test);
    contract.assertClean();
  });
});
