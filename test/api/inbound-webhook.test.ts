/**
 * POST /api/partner/webhooks/inbound on both storage engines: every rule in the order DECISIONS
 * fixes (each test breaks a rule and every later one, and expects the earlier rule's answer),
 * signatures computed here independently over the raw bytes, idempotency (duplicates, conflicts,
 * partner scoping, 50 concurrent identical requests over a real socket), media type and size, the
 * environment's secret, linking of submitted transactions, and logs free of secrets.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createInboundSecretsRepo } from '../../src/db/inbound-secrets.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type NewProduct } from '../../src/db/products.ts';
import { buildApp } from '../../src/server/app.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { address, buildTestApp, deployed, newProduct } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

const URL_PATH = '/api/partner/webhooks/inbound';
const CHAIN = 31337;
const A = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as `0x${string}`;
const TX = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const sign = (secret: string, raw: string | Buffer) =>
  createHmac('sha256', secret).update(raw).digest('hex');

let uniq = 0;
const nextKey = () => `idem-${Date.now()}-${++uniq}`;

describe.each(storageEngines())('inbound webhook on %s', (engine) => {
  let t: TestDatabase;
  let app: App;
  let contract: ContractCheck;
  const logs = captureLogger();
  const box = createSecretBox(randomBytes(32));
  const ids = { acme: '', bravo: '', charlie: '', core: '', sand: '', base: '' };
  const keys = { acmeLive: '', acmeTest: '', bravoLive: '', charlieLive: '' };
  const secrets = { acmeLive: '', acmeTest: '', bravoLive: '' };

  const product = (
    slug: string,
    partnerId: string,
    environment: 'live' | 'test',
    chainId: number,
    n: number,
  ): NewProduct =>
    newProduct({
      partnerId,
      environment,
      slug,
      displayName: slug,
      chainId,
      underlyingVaultAddress: address(1000 + n),
      assetAddress: address(7),
      serviceFeeBps: 150,
      partnerFeeBps: 250,
      serviceFeeRecipient: address(8),
      partnerFeeRecipient: address(9),
      deployed: deployed(address(n), { shareDecimals: 12, block: 5n }),
    });

  beforeAll(async () => {
    t = await freshDatabase(engine);
    const partners = createPartnersRepo(t.db);
    const acme = await partners.create('Acme Wallet');
    const bravo = await partners.create('Bravo Pay');
    const charlie = await partners.create('Charlie Bank');
    const products = createProductsRepo(t.db);
    ids.acme = acme.id;
    ids.bravo = bravo.id;
    ids.charlie = charlie.id;
    ids.core = (await products.create(product('core', acme.id, 'live', CHAIN, 1))).id;
    ids.sand = (await products.create(product('sand', acme.id, 'test', CHAIN, 2))).id;
    ids.base = (await products.create(product('on-base', acme.id, 'live', 8453, 3))).id;
    await products.create(product('bravo-core', bravo.id, 'live', CHAIN, 4));
    const apiKeys = createApiKeysRepo(t.db);
    keys.acmeLive = (await apiKeys.create(acme.id, 'live')).key;
    keys.acmeTest = (await apiKeys.create(acme.id, 'test')).key;
    keys.bravoLive = (await apiKeys.create(bravo.id, 'live')).key;
    keys.charlieLive = (await apiKeys.create(charlie.id, 'live')).key;
    const inbound = createInboundSecretsRepo(t.db, box);
    secrets.acmeLive = (await inbound.set(acme.id, 'live')).secret;
    secrets.acmeTest = (await inbound.set(acme.id, 'test')).secret;
    secrets.bravoLive = (await inbound.set(bravo.id, 'live')).secret;
    // Charlie has a key but no inbound secret.

    app = await buildApp({ db: t.db, logger: logs.logger, secretBox: box });
    contract = attachContractCheck(app);
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await t?.drop();
  });

  interface SendOptions {
    apiKey?: string | undefined;
    secret?: string | undefined;
    /** Overrides the computed signature; null leaves the header out. */
    signature?: string | null;
    idempotencyKey?: string | null;
    event?: string | null;
    contentType?: string | null;
    extraHeaders?: Record<string, string>;
  }

  const rawOf = (body: unknown) => (typeof body === 'string' ? body : JSON.stringify(body));

  async function send(body: unknown, o: SendOptions = {}) {
    const raw = rawOf(body);
    const headers: Record<string, string> = { ...o.extraHeaders };
    const apiKey = 'apiKey' in o ? o.apiKey : keys.acmeLive;
    if (apiKey !== undefined) headers['x-api-key'] = apiKey;
    if (o.contentType !== null) headers['content-type'] = o.contentType ?? 'application/json';
    if (o.signature !== null)
      headers['x-service-signature'] = o.signature ?? sign(o.secret ?? secrets.acmeLive, raw);
    if (o.idempotencyKey !== null) headers['idempotency-key'] = o.idempotencyKey ?? nextKey();
    if (o.event !== null) headers['x-service-event'] = o.event ?? 'ping';
    return app.inject({ method: 'POST', url: URL_PATH, headers, payload: raw });
  }

  const ping = (data: Record<string, unknown> = {}) => ({
    occurred_at: '2026-03-01T12:00:00Z',
    data,
  });
  const deposit = (over: Record<string, unknown> = {}) => ({
    occurred_at: '2026-03-01T12:00:00.123Z',
    data: {
      product_slug: 'core',
      chain_id: CHAIN,
      tx_hash: TX(++uniq),
      user_address: A(42),
      amount: '1250.5',
      ...over,
    },
  });
  const redeem = (over: Record<string, unknown> = {}) => {
    const { amount: _amount, ...data } = deposit(over).data;
    return { occurred_at: '2026-03-01T12:00:00Z', data: { ...data, shares: '10', ...over } };
  };

  const rowsFor = async (partnerId: string, idempotencyKey: string) =>
    (
      await t.db.query<{
        id: string;
        environment: string;
        event_type: string;
        body: string;
        body_sha256: Uint8Array;
        tx_hash: string | null;
        chain_id: string | null;
        product_id: string | null;
        linked_event_id: string | null;
        linked_at: Date | null;
        occurred_at: Date;
      }>('SELECT * FROM inbound_events WHERE partner_id = $1 AND idempotency_key = $2', [
        partnerId,
        idempotencyKey,
      ])
    ).rows;

  const expectError = (
    res: Awaited<ReturnType<typeof send>>,
    status: number,
    code: string,
    message?: RegExp,
  ) => {
    expect({ status: res.statusCode, code: res.json().code }, res.body).toEqual({ status, code });
    expect(res.json()).toEqual({ success: false, code, message: expect.any(String) });
    if (message) expect(res.json().message).toMatch(message);
  };

  describe('acknowledgement', () => {
    it('stores a signed ping and answers { success, event_id, duplicate: false }, unwrapped', async () => {
      const key = nextKey();
      const raw = JSON.stringify(ping({ hello: 'world', nested: { n: 1 } }));
      const res = await send(raw, { idempotencyKey: key });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toEqual({ success: true, event_id: expect.any(Number), duplicate: false });
      expect(Number.isInteger(body.event_id)).toBe(true);
      const rows = await rowsFor(ids.acme, key);
      expect(rows).toHaveLength(1);
      expect(Number(rows[0]!.id)).toBe(body.event_id);
      expect(rows[0]!.body).toBe(raw);
      expect(Buffer.from(rows[0]!.body_sha256).toString('hex')).toBe(
        createHash('sha256').update(raw).digest('hex'),
      );
      expect(rows[0]!).toMatchObject({ environment: 'live', event_type: 'ping', tx_hash: null });
      expect(rows[0]!.occurred_at.toISOString()).toBe('2026-03-01T12:00:00.000Z');
    });

    it('accepts deposit.submitted and redeem.submitted, storing product, chain and lowercase tx', async () => {
      const key = nextKey();
      const hash = `0x${'AbCdEf'.repeat(10)}ABCD`;
      const res = await send(deposit({ tx_hash: hash }), {
        event: 'deposit.submitted',
        idempotencyKey: key,
      });
      expect(res.statusCode, res.body).toBe(200);
      const [row] = await rowsFor(ids.acme, key);
      expect(row).toMatchObject({
        event_type: 'deposit.submitted',
        product_id: ids.core,
        chain_id: String(CHAIN),
        tx_hash: hash.toLowerCase(),
        linked_event_id: null,
      });
      const redeemKey = nextKey();
      const r2 = await send(redeem(), { event: 'redeem.submitted', idempotencyKey: redeemKey });
      expect(r2.statusCode, r2.body).toBe(200);
      expect((await rowsFor(ids.acme, redeemKey))[0]).toMatchObject({
        event_type: 'redeem.submitted',
        product_id: ids.core,
      });
    });

    it('accepts application/json with a charset parameter', async () => {
      const res = await send(ping(), { contentType: 'application/json; charset=utf-8' });
      expect(res.statusCode, res.body).toBe(200);
    });

    it('documents the route, its headers, the acknowledgement and its error codes', async () => {
      const doc = (await app.inject({ url: '/openapi.json' })).json();
      const op = doc.paths[URL_PATH].post;
      expect(op.security).toEqual([{ ApiKey: [] }]);
      const headerNames = op.parameters
        .filter((p: { in: string }) => p.in === 'header')
        .map((p: { name: string; required: boolean }) => [p.name.toLowerCase(), p.required]);
      expect(headerNames).toEqual(
        expect.arrayContaining([
          ['idempotency-key', true],
          ['x-service-event', true],
          ['x-service-signature', true],
        ]),
      );
      expect(op.requestBody.content['application/json']).toBeDefined();
      expect(Object.keys(op.responses).sort()).toEqual(
        ['200', '400', '401', '409', '413', '415', '429', '500', '503'].sort(),
      );
      const text = JSON.stringify(op.responses);
      for (const code of [
        'signature_mismatch',
        'missing_idempotency_key',
        'unknown_event',
        'invalid_payload',
        'idempotency_conflict',
        'payload_too_large',
        'unsupported_media_type',
      ]) {
        expect(text, code).toContain(`"${code}"`);
      }
      // The acknowledgement is the named component InboundAck.
      expect(op.responses['200'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/InboundAck',
      });
      expect(doc.components.schemas.InboundAck.properties).toEqual({
        success: expect.anything(),
        event_id: expect.objectContaining({ type: 'integer' }),
        duplicate: expect.objectContaining({ type: 'boolean' }),
      });
    });
  });

  describe('order of checks', () => {
    it('key first: no key → 401 missing_api_key even when everything else is wrong', async () => {
      const res = await send('not json', {
        apiKey: undefined,
        signature: null,
        idempotencyKey: null,
        event: 'nope',
      });
      expectError(res, 401, 'missing_api_key');
      expectError(await send(ping(), { apiKey: 'svc_live_nope' }), 401, 'invalid_api_key');
    });

    it('signature before the Idempotency-Key: bad signature and no key → 401', async () => {
      const res = await send(ping(), { signature: 'a'.repeat(64), idempotencyKey: null });
      expectError(res, 401, 'signature_mismatch', /does not verify/);
    });

    it('an absent signature header is 401 signature_mismatch, whatever else is wrong', async () => {
      const res = await send('{oops', { signature: null, idempotencyKey: null, event: 'nope' });
      expectError(res, 401, 'signature_mismatch', /X-Service-Signature/);
    });

    it('a bad signature over a body that is not JSON is 401, not 400', async () => {
      const res = await send('{"occurred_at":', {
        signature: sign('whsec_wrong', '{"occurred_at":'),
      });
      expectError(res, 401, 'signature_mismatch');
    });

    it.each([
      ['uppercase hex of the right HMAC', (s: string) => s.toUpperCase()],
      ['63 hex digits', (s: string) => s.slice(1)],
      ['65 hex digits', (s: string) => `${s}0`],
      ['the right HMAC, prefixed sha256=', (s: string) => `sha256=${s}`],
      ['one digit changed', (s: string) => `${s.slice(0, -1)}${s.endsWith('0') ? '1' : '0'}`],
      ['empty', () => ''],
    ])('a signature that is %s is 401', async (_name, mutate) => {
      const raw = JSON.stringify(ping());
      const res = await send(raw, { signature: mutate(sign(secrets.acmeLive, raw)) });
      expectError(res, 401, 'signature_mismatch');
    });

    it('the signature is over the exact bytes: the same JSON re-serialised does not verify', async () => {
      const original = '{"occurred_at":"2026-03-01T12:00:00Z","data":{"a":1,"b":2}}';
      const signature = sign(secrets.acmeLive, original);
      const key = nextKey();
      for (const variant of [
        '{ "occurred_at": "2026-03-01T12:00:00Z", "data": { "a": 1, "b": 2 } }',
        '{"data":{"b":2,"a":1},"occurred_at":"2026-03-01T12:00:00Z"}',
        `${original}\n`,
        JSON.stringify(JSON.parse(original), null, 2),
      ]) {
        expectError(
          await send(variant, { signature, idempotencyKey: key }),
          401,
          'signature_mismatch',
        );
      }
      expect(await rowsFor(ids.acme, key)).toHaveLength(0);
      const ok = await send(original, { signature, idempotencyKey: key });
      expect(ok.statusCode).toBe(200);
    });

    it('a partner without an inbound secret is always refused with 401', async () => {
      const res = await send(ping(), { apiKey: keys.charlieLive, secret: secrets.acmeLive });
      expectError(res, 401, 'signature_mismatch', /No inbound secret/);
    });

    it('another partner’s secret does not verify', async () => {
      const res = await send(ping(), { secret: secrets.bravoLive });
      expectError(res, 401, 'signature_mismatch');
    });

    it('Idempotency-Key before the event type: no key and an unknown event → missing_idempotency_key', async () => {
      const res = await send('not json', { idempotencyKey: null, event: 'nope' });
      expectError(res, 400, 'missing_idempotency_key', /required/);
    });

    it.each([
      ['empty', ''],
      ['256 characters', 'k'.repeat(256)],
      ['non-ASCII', 'clé-ü'],
      ['a tab inside', 'a\tb'],
    ])(
      'an Idempotency-Key that is %s is 400 missing_idempotency_key, "not valid"',
      async (_n, key) => {
        const res = await send('not json', { idempotencyKey: key, event: 'nope' });
        expectError(res, 400, 'missing_idempotency_key', /not valid/);
      },
    );

    it('an Idempotency-Key sent twice is not valid', async () => {
      const raw = JSON.stringify(ping());
      const res = await app.inject({
        method: 'POST',
        url: URL_PATH,
        headers: {
          'x-api-key': keys.acmeLive,
          'content-type': 'application/json',
          'x-service-signature': sign(secrets.acmeLive, raw),
          'x-service-event': 'ping',
          'idempotency-key': ['one', 'two'],
        },
        payload: raw,
      });
      expectError(res, 400, 'missing_idempotency_key', /not valid/);
    });

    it('accepts Idempotency-Keys of 1 and of 255 printable characters, spaces and symbols included', async () => {
      for (const key of ['x', `${'k'.repeat(254)}~`, `a b!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~z`]) {
        const res = await send(ping({ key }), {
          apiKey: keys.bravoLive,
          secret: secrets.bravoLive,
          idempotencyKey: key,
        });
        expect(res.statusCode, `${key}: ${res.body}`).toBe(200);
        expect(await rowsFor(ids.bravo, key)).toHaveLength(1);
      }
    });

    it('the event type before the body: unknown or absent event with a bad body → unknown_event', async () => {
      expectError(
        await send('not json', { event: 'deposit.confirmed' }),
        400,
        'unknown_event',
        /accepted: ping/,
      );
      expectError(await send('not json', { event: 'PING' }), 400, 'unknown_event');
      expectError(await send('not json', { event: null }), 400, 'unknown_event', /X-Service-Event/);
      expectError(await send('not json', { event: 'toString' }), 400, 'unknown_event');
    });

    it('the body before idempotency: an invalid body under a used key is 400, not 200 or 409', async () => {
      const key = nextKey();
      expect((await send(ping(), { idempotencyKey: key })).statusCode).toBe(200);
      expectError(await send('not json', { idempotencyKey: key }), 400, 'invalid_payload');
    });
  });

  describe('body validation', () => {
    const longKey = 'a'.repeat(10);
    it.each<[string, string, unknown, RegExp]>([
      ['not JSON', 'ping', '{"occurred_at":', /JSON/],
      ['empty', 'ping', '', /JSON/],
      ['invalid UTF-8', 'ping', Buffer.from([0x7b, 0xff, 0x7d]), /UTF-8/],
      ['an array', 'ping', '[]', /object/],
      ['null', 'ping', 'null', /object/],
      ['a string', 'ping', '"x"', /object/],
      ['without occurred_at', 'ping', { data: {} }, /occurred_at/],
      ['without data', 'ping', { occurred_at: '2026-03-01T12:00:00Z' }, /data/],
      ['with data an array', 'ping', { occurred_at: '2026-03-01T12:00:00Z', data: [] }, /data/],
      ['with data null', 'ping', { occurred_at: '2026-03-01T12:00:00Z', data: null }, /data/],
      ['with an extra field', 'ping', { ...ping(), id: longKey }, /id is not an accepted field/],
      ['occurred_at a number', 'ping', { occurred_at: 1, data: {} }, /occurred_at/],
      [
        'occurred_at with an offset',
        'ping',
        { occurred_at: '2026-03-01T12:00:00+00:00', data: {} },
        /occurred_at/,
      ],
      [
        'occurred_at without a zone',
        'ping',
        { occurred_at: '2026-03-01T12:00:00', data: {} },
        /occurred_at/,
      ],
      ['occurred_at a date only', 'ping', { occurred_at: '2026-03-01', data: {} }, /occurred_at/],
      [
        'occurred_at not a real day',
        'ping',
        { occurred_at: '2026-02-30T12:00:00Z', data: {} },
        /occurred_at/,
      ],
      [
        'occurred_at hour 24',
        'ping',
        { occurred_at: '2026-03-01T24:00:00Z', data: {} },
        /occurred_at/,
      ],
      [
        'occurred_at lowercase z',
        'ping',
        { occurred_at: '2026-03-01T12:00:00z', data: {} },
        /occurred_at/,
      ],
      [
        'deposit without amount',
        'deposit.submitted',
        { ...deposit(), data: { ...deposit().data, amount: undefined } },
        /data\.amount is required/,
      ],
      [
        'deposit with shares',
        'deposit.submitted',
        { ...deposit(), data: { ...deposit().data, shares: '1' } },
        /data\.shares is not an accepted field/,
      ],
      [
        'redeem with amount',
        'redeem.submitted',
        { ...redeem(), data: { ...redeem().data, amount: '1' } },
        /data\.amount is not an accepted field/,
      ],
      [
        'redeem without shares',
        'redeem.submitted',
        deposit(),
        /data\.(shares is required|amount is not an accepted)/,
      ],
      [
        'an extra data field',
        'deposit.submitted',
        deposit({ memo: 'x' }),
        /data\.memo is not an accepted field/,
      ],
      [
        'a short tx_hash',
        'deposit.submitted',
        deposit({ tx_hash: `0x${'a'.repeat(63)}` }),
        /data\.tx_hash/,
      ],
      [
        'a tx_hash without 0x',
        'deposit.submitted',
        deposit({ tx_hash: 'a'.repeat(64) }),
        /data\.tx_hash/,
      ],
      [
        'a non-hex tx_hash',
        'deposit.submitted',
        deposit({ tx_hash: `0x${'g'.repeat(64)}` }),
        /data\.tx_hash/,
      ],
      [
        'a short user_address',
        'deposit.submitted',
        deposit({ user_address: `0x${'a'.repeat(39)}` }),
        /data\.user_address/,
      ],
      ['chain_id a string', 'deposit.submitted', deposit({ chain_id: '31337' }), /data\.chain_id/],
      ['chain_id 0', 'deposit.submitted', deposit({ chain_id: 0 }), /data\.chain_id/],
      ['chain_id negative', 'deposit.submitted', deposit({ chain_id: -1 }), /data\.chain_id/],
      ['chain_id fractional', 'deposit.submitted', deposit({ chain_id: 1.5 }), /data\.chain_id/],
      ['amount a number', 'deposit.submitted', deposit({ amount: 5 }), /data\.amount/],
      ['amount with an exponent', 'deposit.submitted', deposit({ amount: '1e5' }), /data\.amount/],
      ['amount negative', 'deposit.submitted', deposit({ amount: '-1' }), /data\.amount/],
      [
        'amount with a trailing dot',
        'deposit.submitted',
        deposit({ amount: '1.' }),
        /data\.amount/,
      ],
      ['amount hex', 'deposit.submitted', deposit({ amount: '0x10' }), /data\.amount/],
      ['shares empty', 'redeem.submitted', redeem({ shares: '' }), /data\.shares/],
      [
        'product_slug a number',
        'deposit.submitted',
        deposit({ product_slug: 1 }),
        /data\.product_slug/,
      ],
      [
        'an unknown product',
        'deposit.submitted',
        deposit({ product_slug: 'nope' }),
        /data\.product_slug/,
      ],
      [
        'another partner’s product',
        'deposit.submitted',
        deposit({ product_slug: 'bravo-core' }),
        /data\.product_slug/,
      ],
      [
        'the partner’s product of the other environment',
        'deposit.submitted',
        deposit({ product_slug: 'sand' }),
        /data\.product_slug/,
      ],
      [
        'a chain_id other than the product’s',
        'deposit.submitted',
        deposit({ product_slug: 'on-base' }),
        /data\.chain_id/,
      ],
    ])('a body %s is 400 invalid_payload naming the field', async (_name, event, body, message) => {
      const key = nextKey();
      const raw = Buffer.isBuffer(body) ? body : Buffer.from(rawOf(body));
      const res = await app.inject({
        method: 'POST',
        url: URL_PATH,
        headers: {
          'x-api-key': keys.acmeLive,
          'content-type': 'application/json',
          'x-service-signature': sign(secrets.acmeLive, raw),
          'x-service-event': event,
          'idempotency-key': key,
        },
        payload: raw,
      });
      expectError(res, 400, 'invalid_payload', message);
      expect(await rowsFor(ids.acme, key)).toHaveLength(0);
    });

    it('another partner’s product reads like an unknown one', async () => {
      const a = await send(deposit({ product_slug: 'bravo-core' }), { event: 'deposit.submitted' });
      const b = await send(deposit({ product_slug: 'no-such-product' }), {
        event: 'deposit.submitted',
      });
      expect(a.json()).toEqual(b.json());
    });

    it('ping accepts any data object; occurred_at may carry a fraction', async () => {
      const res = await send({
        occurred_at: '2026-03-01T12:00:00.123456789Z',
        data: { anything: [1, { x: null }] },
      });
      expect(res.statusCode, res.body).toBe(200);
    });
  });

  describe('idempotency', () => {
    it('the same request again answers the original event with duplicate: true and stores nothing', async () => {
      const key = nextKey();
      const raw = JSON.stringify(deposit());
      const first = await send(raw, { event: 'deposit.submitted', idempotencyKey: key });
      expect(first.json()).toMatchObject({ success: true, duplicate: false });
      for (let i = 0; i < 3; i++) {
        const again = await send(raw, { event: 'deposit.submitted', idempotencyKey: key });
        expect(again.statusCode).toBe(200);
        expect(again.json()).toEqual({
          success: true,
          event_id: first.json().event_id,
          duplicate: true,
        });
      }
      expect(await rowsFor(ids.acme, key)).toHaveLength(1);
    });

    it('the same key with another body is 409 idempotency_conflict; the original stays', async () => {
      const key = nextKey();
      const first = await send(ping({ n: 1 }), { idempotencyKey: key });
      expect(first.statusCode).toBe(200);
      expectError(await send(ping({ n: 2 }), { idempotencyKey: key }), 409, 'idempotency_conflict');
      // Same JSON, other bytes: another body too.
      expectError(
        await send(JSON.stringify(ping({ n: 1 }), null, 1), { idempotencyKey: key }),
        409,
        'idempotency_conflict',
      );
      const rows = await rowsFor(ids.acme, key);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.body).toBe(JSON.stringify(ping({ n: 1 })));
      // The original request is still a duplicate.
      const again = await send(ping({ n: 1 }), { idempotencyKey: key });
      expect(again.json()).toEqual({
        success: true,
        event_id: first.json().event_id,
        duplicate: true,
      });
    });

    it('the same key and body with another event type is 409', async () => {
      const key = nextKey();
      const raw = JSON.stringify(deposit());
      expect(
        (await send(raw, { event: 'deposit.submitted', idempotencyKey: key })).statusCode,
      ).toBe(200);
      // ping accepts any data, so the body passes validation and reaches the idempotency check.
      expectError(
        await send(raw, { event: 'ping', idempotencyKey: key }),
        409,
        'idempotency_conflict',
      );
      expect(await rowsFor(ids.acme, key)).toHaveLength(1);
    });

    it('keys are scoped to the partner: another partner may use the same key independently', async () => {
      const key = nextKey();
      const raw = JSON.stringify(ping());
      const acme = await send(raw, { idempotencyKey: key });
      const bravo = await send(raw, {
        idempotencyKey: key,
        apiKey: keys.bravoLive,
        secret: secrets.bravoLive,
      });
      expect(acme.json().duplicate).toBe(false);
      expect(bravo.json().duplicate).toBe(false);
      expect(bravo.json().event_id).not.toBe(acme.json().event_id);
      const bravoDifferent = await send(ping({ other: true }), {
        idempotencyKey: key,
        apiKey: keys.bravoLive,
        secret: secrets.bravoLive,
      });
      expectError(bravoDifferent, 409, 'idempotency_conflict');
      expect(await rowsFor(ids.acme, key)).toHaveLength(1);
      expect(await rowsFor(ids.bravo, key)).toHaveLength(1);
    });

    it('a key spans both environments of the partner: reusing it from the other one is 409', async () => {
      const key = nextKey();
      const raw = JSON.stringify(ping());
      expect((await send(raw, { idempotencyKey: key })).statusCode).toBe(200);
      const test = await send(raw, {
        idempotencyKey: key,
        apiKey: keys.acmeTest,
        secret: secrets.acmeTest,
      });
      expectError(test, 409, 'idempotency_conflict');
    });

    it('50 concurrent identical requests over a real socket store exactly one event', async () => {
      const server = await buildTestApp({ db: t.db, secretBox: box });
      const serverContract = attachContractCheck(server);
      await server.listen({ port: 0, host: '127.0.0.1' });
      try {
        const bound = server.server.address();
        if (!bound || typeof bound === 'string') throw new Error('no port');
        const key = nextKey();
        const raw = JSON.stringify(deposit());
        const headers = {
          'x-api-key': keys.acmeLive,
          'content-type': 'application/json',
          'x-service-signature': sign(secrets.acmeLive, raw),
          'x-service-event': 'deposit.submitted',
          'idempotency-key': key,
        };
        const answers = await Promise.all(
          Array.from({ length: 50 }, async () => {
            const res = await fetch(`http://127.0.0.1:${bound.port}${URL_PATH}`, {
              method: 'POST',
              headers,
              body: raw,
            });
            return {
              status: res.status,
              body: (await res.json()) as { event_id: number; duplicate: boolean },
            };
          }),
        );
        expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
        expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
        expect(answers.filter((a) => a.body.duplicate)).toHaveLength(49);
        expect(new Set(answers.map((a) => a.body.event_id)).size).toBe(1);
        const rows = await rowsFor(ids.acme, key);
        expect(rows).toHaveLength(1);
        expect(Number(rows[0]!.id)).toBe(answers[0]!.body.event_id);
        serverContract.assertClean();
        expect(serverContract.checked()).toBe(50);
      } finally {
        await server.close();
      }
    });
  });

  describe('environments and secrets', () => {
    it('a test key is verified with the test secret; the live secret fails', async () => {
      const ok = await send(deposit({ product_slug: 'sand' }), {
        apiKey: keys.acmeTest,
        secret: secrets.acmeTest,
        event: 'deposit.submitted',
      });
      expect(ok.statusCode, ok.body).toBe(200);
      const live = await send(ping(), { apiKey: keys.acmeTest, secret: secrets.acmeLive });
      expectError(live, 401, 'signature_mismatch');
      const testOnLive = await send(ping(), { apiKey: keys.acmeLive, secret: secrets.acmeTest });
      expectError(testOnLive, 401, 'signature_mismatch');
    });

    it('a test key names test products; a live slug is invalid there', async () => {
      const res = await send(deposit({ product_slug: 'core' }), {
        apiKey: keys.acmeTest,
        secret: secrets.acmeTest,
        event: 'deposit.submitted',
      });
      expectError(res, 400, 'invalid_payload', /data\.product_slug/);
    });

    it('a rotated secret takes effect within the read cache poll (1 s)', async () => {
      const inbound = createInboundSecretsRepo(t.db, box);
      const rotated = (await inbound.set(ids.bravo, 'live')).secret;
      const rotatedAt = Date.now();
      // The secret is cached with the read model: the rotation bumps its version, and every API
      // process drops the old secret at its next poll.
      await waitFor(
        async () =>
          (await send(ping(), { apiKey: keys.bravoLive, secret: rotated })).statusCode === 200
            ? true
            : undefined,
        3_000,
        'the rotated secret',
      );
      expect(Date.now() - rotatedAt).toBeLessThan(2_500);
      const old = await send(ping(), { apiKey: keys.bravoLive, secret: secrets.bravoLive });
      expectError(old, 401, 'signature_mismatch');
      const fresh = await send(ping(), { apiKey: keys.bravoLive, secret: rotated });
      expect(fresh.statusCode).toBe(200);
      secrets.bravoLive = rotated;
    });

    it('without a secret box every request is refused with 401', async () => {
      const bare = await buildTestApp({ db: t.db });
      const bareContract = attachContractCheck(bare);
      await bare.ready();
      const raw = JSON.stringify(ping());
      const res = await bare.inject({
        method: 'POST',
        url: URL_PATH,
        headers: {
          'x-api-key': keys.acmeLive,
          'content-type': 'application/json',
          'x-service-signature': sign(secrets.acmeLive, raw),
          'x-service-event': 'ping',
          'idempotency-key': nextKey(),
        },
        payload: raw,
      });
      expectError(res, 401, 'signature_mismatch');
      bareContract.assertClean();
      await bare.close();
    });
  });

  describe('media type and size', () => {
    const pad = (total: number) => {
      // {"occurred_at":"2026-03-01T12:00:00Z","data":{"p":""}} is 55 bytes without padding.
      const empty = JSON.stringify(ping({ p: '' }));
      return JSON.stringify(ping({ p: 'x'.repeat(total - empty.length) }));
    };

    it('64 KiB exactly is accepted; one byte more is 413 payload_too_large', async () => {
      const exact = pad(64 * 1024);
      expect(Buffer.byteLength(exact)).toBe(64 * 1024);
      const ok = await send(exact);
      expect(ok.statusCode, ok.body).toBe(200);
      const over = pad(64 * 1024 + 1);
      expect(Buffer.byteLength(over)).toBe(64 * 1024 + 1);
      expectError(await send(over), 413, 'payload_too_large');
    });

    it('a body over 64 KiB is 413 even when unsigned', async () => {
      expectError(await send(pad(100_000), { signature: null }), 413, 'payload_too_large');
    });

    it.each([
      ['text/plain', 'text/plain'],
      ['form data', 'application/x-www-form-urlencoded'],
      ['application/xml', 'application/xml'],
    ])('Content-Type %s is 415 unsupported_media_type', async (_n, contentType) => {
      expectError(await send(ping(), { contentType }), 415, 'unsupported_media_type');
    });

    it('a body without Content-Type is 415', async () => {
      expectError(await send(ping(), { contentType: null }), 415, 'unsupported_media_type');
    });

    it('no body and no Content-Type is 415', async () => {
      const res = await app.inject({
        method: 'POST',
        url: URL_PATH,
        headers: { 'x-api-key': keys.acmeLive, 'x-service-signature': sign(secrets.acmeLive, '') },
      });
      expectError(res, 415, 'unsupported_media_type');
    });

    it('other routes still parse JSON normally', async () => {
      const res = await app.inject({
        method: 'GET',
        url: '/api/partner/products',
        headers: { 'x-api-key': keys.acmeLive },
      });
      expect(res.statusCode).toBe(200);
    });
  });

  describe('linking submitted transactions', () => {
    const events = () => createEventsRepo(t.db);
    const lifecycle = (eventType: string, txHash: string, productId: string, n: number) =>
      events().insert({
        partnerId: ids.acme,
        environment: 'live',
        productId,
        eventType,
        dedupeKey: `${eventType}:${CHAIN}:${txHash}:${n}`,
        payload: { tx: txHash },
        occurredAt: new Date('2026-03-01T12:00:05Z'),
        chain: {
          chainId: CHAIN,
          blockNumber: 100n,
          blockHash: `0x${'b'.repeat(64)}`,
          txHash: txHash as `0x${string}`,
          logIndex: n,
        },
      });

    it('a submitted deposit links when the indexer later stores its deposit.confirmed', async () => {
      const key = nextKey();
      const hash = TX(900_001);
      const upper = `0x${hash.slice(2).toUpperCase()}`;
      const res = await send(deposit({ tx_hash: upper }), {
        event: 'deposit.submitted',
        idempotencyKey: key,
      });
      expect(res.statusCode, res.body).toBe(200);
      expect((await rowsFor(ids.acme, key))[0]!.linked_event_id).toBeNull();
      // A log of another product or type in the same transaction does not link it.
      await lifecycle('redeem.confirmed', hash, ids.core, 0);
      expect((await rowsFor(ids.acme, key))[0]!.linked_event_id).toBeNull();
      const stored = await lifecycle('deposit.confirmed', hash, ids.core, 1);
      const [row] = await rowsFor(ids.acme, key);
      expect(row!.linked_event_id).toBe(stored!.id);
      expect(row!.linked_at).toBeInstanceOf(Date);
    });

    it('a submitted redeem whose log the indexer already stored links at once', async () => {
      const hash = TX(900_002);
      const stored = await lifecycle('redeem.requested', hash, ids.core, 0);
      const key = nextKey();
      const res = await send(redeem({ tx_hash: hash }), {
        event: 'redeem.submitted',
        idempotencyKey: key,
      });
      expect(res.statusCode, res.body).toBe(200);
      expect((await rowsFor(ids.acme, key))[0]!.linked_event_id).toBe(stored!.id);
    });

    it('a duplicate does not reprocess: the original row stays as it was, the repeat counted', async () => {
      const hash = TX(900_003);
      const key = nextKey();
      const raw = JSON.stringify(redeem({ tx_hash: hash }));
      const first = await send(raw, { event: 'redeem.submitted', idempotencyKey: key });
      const before = await rowsFor(ids.acme, key);
      const again = await send(raw, { event: 'redeem.submitted', idempotencyKey: key });
      expect(again.json()).toEqual({
        success: true,
        event_id: first.json().event_id,
        duplicate: true,
      });
      // Only the repeat counters move (migration 0028, shown on the portal's inbound page).
      const [after] = await rowsFor(ids.acme, key);
      const { duplicate_count, last_duplicate_at, ...rest } = after as typeof after & {
        duplicate_count: number;
        last_duplicate_at: Date | null;
      };
      expect([duplicate_count, last_duplicate_at]).toEqual([1, expect.any(Date)]);
      expect([{ ...rest, duplicate_count: 0, last_duplicate_at: null }]).toEqual(before);
    });
  });

  describe('logs', () => {
    it('never contain an inbound secret or a signature', async () => {
      const raw = JSON.stringify(ping({ marker: 'log-check' }));
      const signature = sign(secrets.acmeLive, raw);
      await send(raw, { signature });
      await send(raw, { signature: 'f'.repeat(64) });
      const text = logs.lines().join('\n');
      expect(text.length).toBeGreaterThan(0);
      for (const secret of Object.values(secrets)) expect(text).not.toContain(secret);
      expect(text).not.toContain(signature);
      expect(text).not.toContain('f'.repeat(64));
      expect(text).not.toContain('whsec_');
    });

    it('every response matched the OpenAPI document', () => {
      expect(contract.checked()).toBeGreaterThan(50);
      contract.assertClean();
    });
  });
});
