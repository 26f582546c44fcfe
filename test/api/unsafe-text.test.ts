/**
 * Text PostgreSQL refuses (NUL, lone surrogates, invalid UTF-8) answers 400 in the envelope, never
 * 500 (#33: a signed `deposit.submitted` whose `data.product_slug` held `\u0000` answered 500
 * internal_error). On both engines, against the real database:
 *
 * - the finding itself, then a fuzz over every body field of the inbound endpoint (each event type,
 *   each field, each bad value spliced at a random place), signed correctly so the body check runs;
 * - the path, query and headers of the read endpoints;
 * - the portal's forms (a signed-in member's, and the public sign-in form).
 *
 * Every answer is checked: a 4xx, never 500, the envelope (or the portal's error page) and, for the
 * API, the contract of the OpenAPI document.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createInboundSecretsRepo } from '../../src/db/inbound-secrets.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo } from '../../src/db/products.ts';
import { ERROR_CATALOGUE } from '../../src/http/errors.ts';
import { unsafeTextAt } from '../../src/http/text-check.ts';
import { buildApp } from '../../src/server/app.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { address, deployed, newProduct } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { type Harness, portalHarness } from '../portal/harness.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

const A = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as `0x${string}`;
const TX = `0x${'ab'.repeat(32)}`;
const CHAIN = 31337;

/** What PostgreSQL refuses, as JS strings (invalid UTF-8 is a byte-level case, below). */
const BAD = {
  nul: '\u0000',
  'lone high surrogate': '\ud800',
  'lone low surrogate': '\udfff',
  'reversed pair': '\udc00\ud800',
};

/** A seeded generator, so a failing case can be replayed (the seed is printed). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const splice = (s: string, bad: string, r: () => number) => {
  const at = Math.floor(r() * (s.length + 1));
  return s.slice(0, at) + bad + s.slice(at);
};

describe('unsafeTextAt', () => {
  it('names the first refused string at any depth, keys included, and passes valid text', () => {
    expect(unsafeTextAt({ a: ['ok', { b: 'x\u0000' }] })).toBe('body.a[1].b');
    expect(unsafeTextAt({ ['k\ud800']: 1 })).toBe('body (a field name)');
    expect(unsafeTextAt(Buffer.from([0x61, 0xff]))).toBe('body');
    // A surrogate pair (an emoji), U+FFFD and other non-ASCII text are fine.
    expect(unsafeTextAt({ a: '😀 \ufffd é 中', b: [1, null, true] })).toBeUndefined();
    // Deep nesting does not overflow the stack.
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(unsafeTextAt(deep)).toMatch(/^body(\[0\]){20000}$/);
  });
});

describe.each(storageEngines())('text PostgreSQL refuses, on %s', (engine) => {
  let t: TestDatabase;
  let app: App;
  let contract: ContractCheck;
  let key = '';
  let secret = '';
  const logs = captureLogger();
  const box = createSecretBox(randomBytes(32));
  let idem = 0;

  beforeAll(async () => {
    t = await freshDatabase(engine);
    const partner = await createPartnersRepo(t.db).create('Acme Wallet');
    await createProductsRepo(t.db).create(
      newProduct({
        partnerId: partner.id,
        chainId: CHAIN,
        underlyingVaultAddress: address(1000),
        assetAddress: address(7),
        serviceFeeBps: 150,
        partnerFeeBps: 250,
        serviceFeeRecipient: address(8),
        partnerFeeRecipient: address(9),
        deployed: deployed(address(1), { shareDecimals: 12, block: 5n }),
      }),
    );
    key = (await createApiKeysRepo(t.db).create(partner.id, 'live')).key;
    secret = (await createInboundSecretsRepo(t.db, box).set(partner.id, 'live')).secret;
    app = await buildApp({ db: t.db, logger: logs.logger, secretBox: box });
    contract = attachContractCheck(app);
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  const send = (event: string, raw: Buffer) =>
    app.inject({
      method: 'POST',
      url: '/api/partner/webhooks/inbound',
      headers: {
        'x-api-key': key,
        'content-type': 'application/json',
        'idempotency-key': `idem-${engine}-${++idem}`,
        'x-service-event': event,
        'x-service-signature': createHmac('sha256', secret).update(raw).digest('hex'),
      },
      payload: raw,
    });

  const expectRefused = (res: { statusCode: number; body: string }, code: string, what: string) => {
    expect({ what, status: res.statusCode }).toEqual({ what, status: 400 });
    const body = JSON.parse(res.body) as { success: boolean; code: string; message: string };
    expect({ what, body }).toEqual({
      what,
      body: { success: false, code, message: expect.any(String) },
    });
    expect(Object.keys(ERROR_CATALOGUE)).toContain(body.code);
  };

  it('the finding: a NUL in data.product_slug of a signed deposit.submitted is 400 invalid_payload, not 500', async () => {
    const raw = Buffer.from(
      JSON.stringify({
        occurred_at: '2026-01-31T12:00:00Z',
        data: {
          product_slug: 'co\u0000re',
          chain_id: CHAIN,
          tx_hash: TX,
          user_address: A(42),
          amount: '10.5',
        },
      }),
    );
    const res = await send('deposit.submitted', raw);
    expectRefused(res, 'invalid_payload', 'nul in product_slug');
    expect(JSON.parse(res.body).message).toContain('data.product_slug');
    // The same body without the NUL is accepted: the refusal is the byte, not the request.
    const ok = await send('deposit.submitted', Buffer.from(raw.toString().replace('\\u0000', '')));
    expect(ok.body).toContain('"success":true');
  });

  it('fuzz: every field of every inbound event type, each refused value, at random places: 400, never 500', async () => {
    const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
    const r = rng(seed);
    const bodies: Record<string, Record<string, unknown>> = {
      ping: { nonce: 'hello', note: { nested: ['a', 'b'] } },
      'deposit.submitted': {
        product_slug: 'core',
        chain_id: CHAIN,
        tx_hash: TX,
        user_address: A(42),
        amount: '10.5',
      },
      'redeem.submitted': {
        product_slug: 'core',
        chain_id: CHAIN,
        tx_hash: TX,
        user_address: A(42),
        shares: '3',
      },
    };
    const statuses = new Map<number, number>();
    let cases = 0;
    for (const [event, data] of Object.entries(bodies)) {
      // Every field, plus an extra one (at depth) and a field name.
      const fields = [...Object.keys(data), 'extra', 'extra_deep', '<key>'];
      for (const field of fields) {
        for (const [name, bad] of Object.entries(BAD)) {
          for (let round = 0; round < 3; round++) {
            const d: Record<string, unknown> = { ...data };
            if (field === 'extra') d.extra = splice('free text', bad, r);
            else if (field === 'extra_deep') d.extra = { a: [{ b: splice('deep', bad, r) }] };
            else if (field === '<key>') d[splice('field', bad, r)] = 'x';
            else d[field] = splice(String(data[field]), bad, r);
            const res = await send(
              event,
              Buffer.from(JSON.stringify({ occurred_at: '2026-01-31T12:00:00Z', data: d })),
            );
            statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
            expectRefused(res, 'invalid_payload', `${event} ${field} ${name} (seed ${seed})`);
            cases++;
          }
        }
        // Invalid UTF-8: a byte no UTF-8 sequence starts with, spliced into the field's value.
        const json = JSON.stringify({
          occurred_at: '2026-01-31T12:00:00Z',
          data: {
            ...data,
            [field.startsWith('<') || field.startsWith('extra') ? 'extra' : field]: 'xx',
          },
        });
        const at = json.indexOf('"xx"') + 2;
        const raw = Buffer.concat([
          Buffer.from(json.slice(0, at)),
          Buffer.from([0xff]),
          Buffer.from(json.slice(at)),
        ]);
        const res = await send(event, raw);
        expectRefused(res, 'invalid_payload', `${event} ${field} invalid utf-8`);
        cases++;
      }
      // The top-level occurred_at too.
      for (const bad of Object.values(BAD)) {
        const res = await send(
          event,
          Buffer.from(
            JSON.stringify({ occurred_at: splice('2026-01-31T12:00:00Z', bad, r), data }),
          ),
        );
        expectRefused(res, 'invalid_payload', `${event} occurred_at`);
        cases++;
      }
    }
    console.log(
      `[unsafe-text] ${engine}: ${cases} inbound cases, seed ${seed}, statuses ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}`,
    );
    contract.assertClean();
  });

  it('path and query of the read endpoints: 404 or 400, never 500', async () => {
    const cases: Array<{ url: string; headers?: Record<string, string> }> = [
      { url: '/api/partner/products/co%00re' },
      { url: '/api/partner/products/%00/apy-history?days=7' },
      { url: '/api/partner/products/core/fee-stats?from=2026-01-01%00' },
      { url: '/api/partner/products/core/yield-calc?amount=1%00' },
      { url: `/api/partner/products/core/position?address=${A(5)}%00` },
      // A percent-encoded surrogate is invalid UTF-8: the router refuses it (404).
      { url: '/api/partner/products/core%ED%A0%80' },
      { url: '/api/partner/products?%00=1' },
    ];
    for (const c of cases) {
      const res = await app.inject({
        method: 'GET',
        url: c.url,
        headers: { 'x-api-key': key, ...c.headers },
      });
      expect(res.statusCode, c.url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, c.url).toBeLessThan(500);
      const body = JSON.parse(res.body);
      expect(body, c.url).toEqual({
        success: false,
        code: expect.any(String),
        message: expect.any(String),
      });
    }
    // The query's NUL is this check's, by name; a path parameter's names nothing that exists.
    const nul = await app.inject({
      method: 'GET',
      url: '/api/partner/products/core/yield-calc?amount=1%00',
      headers: { 'x-api-key': key },
    });
    expectRefused(nul, 'malformed_request', 'nul in the query');
    const inPath = await app.inject({
      method: 'GET',
      url: '/api/partner/products/co%00re/fee-stats',
      headers: { 'x-api-key': key },
    });
    expect({ status: inPath.statusCode, code: JSON.parse(inPath.body).code }).toEqual({
      status: 404,
      code: 'not_found',
    });
    // The key is still checked first (DECISIONS' order): no key, 401 whatever the path holds.
    const noKey = await app.inject({ method: 'GET', url: '/api/partner/products/co%00re' });
    expect(noKey.statusCode).toBe(401);
    contract.assertClean();
    expect(logs.lines().filter((l) => l.includes('"level":50'))).toEqual([]);
  });
});

describe.each(storageEngines())("the portal's forms, on %s", (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await portalHarness({ engine });
  });
  afterAll(async () => {
    await h?.close();
  });

  // A form travels percent-encoded: a lone surrogate or an invalid byte arrives as U+FFFD (valid
  // text), so of the refused values only the NUL reaches a form field.
  it('every form field with a NUL answers a 400 page, never 500', async () => {
    const r = rng(7);
    const member = await h.signedIn('owner@acme.test');
    await member.get('/portal/live/keys');
    const forms: Array<[string, Record<string, string>]> = [
      ['/portal/live/keys', { name: 'ci key' }],
      ['/portal/live/team', { email: 'new@acme.test', role: 'viewer' }],
      [
        '/portal/live/webhooks',
        { url: 'https://hooks.acme.test/in', event_types: 'deposit.confirmed' },
      ],
      ['/portal/live/embed/origins', { origin: 'https://wallet.acme.test' }],
    ];
    let cases = 0;
    for (const [url, fields] of forms) {
      for (const field of Object.keys(fields)) {
        for (let round = 0; round < 3; round++) {
          const page = await member.post(url, {
            ...fields,
            [field]: splice(fields[field]!, '\0', r),
          });
          expect({ url, field, status: page.status }).toEqual({ url, field, status: 400 });
          cases++;
        }
      }
    }
    // The public sign-in form too.
    const visitor = h.client();
    await visitor.get('/portal/sign-in');
    for (let round = 0; round < 3; round++) {
      const page = await visitor.post('/portal/sign-in', { email: splice('a@acme.test', '\0', r) });
      expect(page.status).toBe(400);
      cases++;
    }
    console.log(`[unsafe-text] portal on ${engine}: ${cases} form cases`);
    expect(h.logLines().filter((l) => l.includes('"level":50'))).toEqual([]);
  });
});
