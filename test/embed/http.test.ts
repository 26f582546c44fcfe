/**
 * The embed's server side over HTTP (Fastify inject, PGlite): public embed ids per partner
 * environment, CSP frame-ancestors from the allowed origins, only the environment's own deployed
 * products, the product view from the API's read model, transaction reports stored like inbound
 * `*.submitted` events, the per-address limit apart from the partner's API budget, and the
 * built assets. The state gate with live chain health is covered by embed-gate cases below and
 * in real Chromium by the e2e suite.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEmbedSettingsRepo, normaliseOrigin } from '../../src/db/embed-settings.ts';
import { createInboundEventsRepo } from '../../src/db/inbound-events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product, type ProductStatus } from '../../src/db/products.ts';
import { embedCsp } from '../../src/embed/csp.ts';
import { buildProductView, embedGate } from '../../src/embed/product-view.ts';
import { createLogger } from '../../src/logger.ts';
import { buildApp } from '../../src/server/app.ts';
import { newProduct } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { insertSnapshots } from '../helpers/snapshots.ts';
import { builtEmbedAssets } from './build.ts';

const ADDR = '0x00000000000000000000000000000000000000a1' as const;
const TX = `0x${'ab'.repeat(32)}`;

let t: TestDatabase;
let app: Awaited<ReturnType<typeof buildApp>>;
let acme: string;
let bravo: string;
let apiKey: string;
const ids: Record<string, string> = {};
const products: Record<string, Product> = {};

beforeAll(async () => {
  t = await freshDatabase('pglite');
  const partners = createPartnersRepo(t.db);
  acme = (await partners.create('Acme')).id;
  bravo = (await partners.create('Bravo')).id;
  const repo = createProductsRepo(t.db);
  const base = {
    displayName: 'USDC Core',
    engineName: 'E',
    engineSymbol: 'E',
    underlyingVaultAddress: ADDR,
    assetAddress: ADDR,
    serviceFeeBps: 300,
    partnerFeeBps: 200,
    serviceFeeRecipient: ADDR,
    partnerFeeRecipient: ADDR,
  };
  const make = async (
    slug: string,
    partnerId: string,
    environment: 'live' | 'test',
    status: ProductStatus,
  ) => {
    products[slug] = await repo.create(
      newProduct({
        ...base,
        partnerId,
        environment,
        slug,
        ...(status === 'pending_deploy'
          ? {}
          : {
              deployed: {
                engineAddress: `0x${(Object.keys(products).length + 16).toString(16).padStart(40, '0')}`,
                shareDecimals: 12,
                block: 7n,
                at: new Date(),
                status,
              },
            }),
      }),
    );
  };
  await make('acme-core', acme, 'live', 'active');
  await make('acme-paused', acme, 'live', 'paused');
  await make('acme-old', acme, 'live', 'deprecated');
  await make('acme-soon', acme, 'live', 'pending_deploy');
  await make('acme-sandbox', acme, 'test', 'active');
  await make('bravo-core', bravo, 'live', 'active');
  await make('acme-launch', acme, 'live', 'active');
  await insertSnapshots(t.db, products['acme-core']!.id, [
    { date: '2026-11-20', totalAssets: 1_000_000_000n, underlyingApy: null, netApy: null },
    {
      date: '2026-11-21',
      totalAssets: 1_234_567_891_234n,
      underlyingApy: '0.071234',
      netApy: '0.061234',
    },
  ]);
  // Launched today: the provisional row, without APYs of its own, with the launch-day estimate the
  // metrics processor stores (underlying-estimate.ts), here written directly.
  await insertSnapshots(t.db, products['acme-launch']!.id, [
    { date: '2026-11-21', totalAssets: 25_000_000n, underlyingApy: null, netApy: null },
  ]);
  await t.db.query(
    `UPDATE daily_snapshots SET estimated_underlying_apy = 0.043614, estimated_net_apy = 0.041434
     WHERE product_id = $1`,
    [products['acme-launch']!.id],
  );
  const settings = createEmbedSettingsRepo(t.db);
  for (const [name, id] of [
    ['acme', acme],
    ['bravo', bravo],
  ] as const) {
    for (const env of ['live', 'test'] as const) {
      ids[`${name}-${env}`] = (await settings.get(id, env))!.embedId;
    }
  }
  await settings.setOrigins(acme, 'live', ['https://wallet.example', 'http://localhost:5173']);
  apiKey = (await createApiKeysRepo(t.db).create(acme, 'live')).key;
  app = await buildApp({
    db: t.db,
    logger: createLogger('silent'),
    readCache: { pollMs: 50 },
    // The per-address window is pinned: the limit test cannot depend on the machine's speed.
    embed: { assets: builtEmbedAssets(), ratePerMinute: 40, rateClock: () => 0 },
  });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await t?.drop();
});

// Each test speaks from its own client address: the per-address limit is tested on its own.
let nextIp = 1;
const from = () => `10.0.0.${nextIp++}`;

describe('embed settings', () => {
  it('every partner environment has its own public embed id from creation', () => {
    const all = Object.values(ids);
    for (const id of all) expect(id).toMatch(/^emb_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect(new Set(all).size).toBe(4);
  });

  it('origins are normalised, and anything but an origin is refused with the reason', () => {
    expect(normaliseOrigin('HTTPS://Wallet.Example:443/')).toEqual({
      origin: 'https://wallet.example',
    });
    expect(normaliseOrigin('http://127.0.0.1:8080')).toEqual({ origin: 'http://127.0.0.1:8080' });
    expect(normaliseOrigin('http://LOCALHOST:5173/')).toEqual({ origin: 'http://localhost:5173' });
    expect(normaliseOrigin('http://[::1]:3000')).toEqual({ origin: 'http://[::1]:3000' });
    // Plain http:// only for a page on this machine.
    expect(normaliseOrigin('http://wallet.example')).toEqual({
      error:
        '"http://wallet.example" must use https://; http:// is accepted only for a local page (localhost, 127.0.0.1, [::1])',
    });
    for (const bad of [
      'http://10.0.0.1:8080',
      'http://localhost.evil.example',
      'wallet.example',
      'ftp://x.example',
      'https://x.example/path',
      'https://*.x.example',
    ]) {
      expect(normaliseOrigin(bad)).toHaveProperty('error');
    }
  });
});

describe('the embed page', () => {
  it('serves the product with CSP frame-ancestors of exactly the allowed origins, and no key', async () => {
    const res = await app.inject({
      url: `/embed/${ids['acme-live']}/acme-core?theme=dark&accent=0a7cff&origin=https://wallet.example`,
      remoteAddress: from(),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain('frame-ancestors http://localhost:5173 https://wallet.example');
    expect(csp).toBe(embedCsp(['http://localhost:5173', 'https://wallet.example']));
    expect(res.body).not.toContain(apiKey);
    expect(res.body).not.toMatch(/svc_(live|test)_/);
    const json = /<script id="embed-config" type="application\/json">(.*?)<\/script>/s.exec(
      res.body,
    )?.[1];
    const config = JSON.parse(json!);
    expect(config).toMatchObject({
      slug: 'acme-core',
      theme: 'dark',
      accent: '#0a7cff',
      bridge: false,
      host_origin: 'https://wallet.example',
      product: { display_name: 'USDC Core', partner: 'Acme', status: 'active' },
    });
    // The app's script and stylesheet, from the manifest.
    const script = /<script type="module" src="(\/embed\/assets\/[^"]+\.js)">/.exec(res.body)?.[1];
    const asset = await app.inject({ url: script!, headers: { 'accept-encoding': 'gzip' } });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-encoding']).toBe('gzip');
    expect(asset.headers['cache-control']).toContain('immutable');
  });

  it("an origin parameter that is not allowed is not used as the events' target", async () => {
    const res = await app.inject({
      url: `/embed/${ids['acme-live']}/acme-core?origin=https://evil.example&theme=neon&accent=red`,
      remoteAddress: from(),
    });
    const config = JSON.parse(
      /<script id="embed-config" type="application\/json">(.*?)<\/script>/s.exec(res.body)![1]!,
    );
    expect(config.host_origin).toBeNull(); // two allowed origins, none named: no target
    expect(config.theme).toBe('auto');
    expect(config.accent).toBeNull();
  });

  it('an environment without allowed origins may be framed by nobody', async () => {
    const res = await app.inject({
      url: `/embed/${ids['acme-test']}/acme-sandbox`,
      remoteAddress: from(),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  it('only the environment’s own deployed products: everything else is the same 404', async () => {
    const cases = [
      `/embed/${ids['acme-live']}/bravo-core`, // another partner's
      `/embed/${ids['acme-live']}/acme-sandbox`, // own, other environment
      `/embed/${ids['acme-test']}/acme-core`,
      `/embed/${ids['acme-live']}/acme-soon`, // pending_deploy: not offered
      `/embed/${ids['acme-live']}/no-such`,
      `/embed/emb_${'0'.repeat(32)}/acme-core`,
    ];
    for (const url of cases) {
      const res = await app.inject({ url, remoteAddress: from() });
      expect(res.statusCode, url).toBe(404);
      expect(res.body).toContain('not_found');
    }
    const json = await app.inject({
      url: `/embed/api/${ids['acme-live']}/bravo-core`,
      remoteAddress: from(),
    });
    expect(json.json()).toEqual({
      success: false,
      code: 'not_found',
      message: 'No such embed product.',
    });
    const malformed = await app.inject({
      url: '/embed/api/emb_x/acme-core',
      remoteAddress: from(),
    });
    expect(malformed.statusCode).toBe(404);
    expect(malformed.json().code).toBe('not_found');
  });
});

describe('the product view', () => {
  it('shows the figures of the API read model: TVL, net APY and its day, fees', async () => {
    const view = (
      await app.inject({ url: `/embed/api/${ids['acme-live']}/acme-core`, remoteAddress: from() })
    ).json().data;
    const api = (
      await app.inject({
        url: '/api/partner/products/acme-core',
        headers: { 'x-api-key': apiKey },
        remoteAddress: from(),
      })
    ).json().data;
    expect(view.tvl).toBe(api.latest_metrics.engine_total_assets);
    expect(view.tvl).toBe('1234567.891234');
    expect(view.net_apy).toBe(api.latest_metrics.net_apy_for_user);
    expect(view.apy_basis).toBe(api.latest_metrics.apy_basis);
    expect(view.apy_basis).toBe('engine');
    expect(view.net_apy_7d).toBe(api.latest_metrics.net_apy_7d);
    expect(view.as_of_date).toBe('2026-11-21');
    expect(view).toMatchObject({
      service_fee_bps: api.service_fee_bps,
      partner_fee_bps: api.partner_fee_bps,
      engine_address: api.engine_contract_address,
      asset_decimals: 6,
      share_decimals: 12,
      vault_kind: 'sync',
      deployed_block: '7',
      scheduled_fee_change: null,
    });
    // No chain configured here: the health read fails, so deposits are off with the reason.
    expect(view.gate).toEqual({
      deposit: false,
      withdraw: true,
      reason: expect.stringMatching(/network cannot be reached/),
    });
  });

  it("a product without a full day of its own: the launch-day estimate, with the API's apy_basis", async () => {
    const view = (
      await app.inject({
        url: `/embed/api/${ids['acme-live']}/acme-launch`,
        remoteAddress: from(),
      })
    ).json().data;
    const api = (
      await app.inject({
        url: '/api/partner/products/acme-launch',
        headers: { 'x-api-key': apiKey },
        remoteAddress: from(),
      })
    ).json().data;
    expect(api.latest_metrics).toMatchObject({
      net_apy_for_user: '0.041434',
      apy_basis: 'underlying_estimate',
    });
    expect(view).toMatchObject({
      net_apy: '0.041434',
      apy_basis: 'underlying_estimate',
      as_of_date: '2026-11-21',
    });
    // No snapshot (or no APY on any basis yet): no figure and no basis.
    const none = buildProductView(products['acme-launch']!, undefined, undefined, 'Local');
    expect(none).toMatchObject({ net_apy: null, apy_basis: null });
  });

  it('paused and deprecated products keep withdrawals, with the reason in words', async () => {
    const paused = (
      await app.inject({ url: `/embed/api/${ids['acme-live']}/acme-paused`, remoteAddress: from() })
    ).json().data;
    expect(paused.gate).toMatchObject({ deposit: false, withdraw: true });
    expect(paused.gate.reason).toMatch(/^Deposits are paused/);
    const old = (
      await app.inject({ url: `/embed/api/${ids['acme-live']}/acme-old`, remoteAddress: from() })
    ).json().data;
    expect(old.gate).toMatchObject({ deposit: false, withdraw: true });
    expect(old.gate.reason).toMatch(/closed to new deposits/);
  });

  it('a scheduled fee change is shown with the time it may apply from', () => {
    const p = products['acme-core']!;
    const view = buildProductView(p, undefined, undefined, 'Local', {
      serviceFeeBps: 400,
      partnerFeeBps: 300,
      effectiveAt: 1_796_000_000n,
    });
    expect(view.scheduled_fee_change).toEqual({
      service_fee_bps: 400,
      partner_fee_bps: 300,
      at: '2026-11-30T00:53:20.000Z',
    });
    expect(buildProductView(p, undefined, undefined, 'Local').scheduled_fee_change).toBeNull();
  });

  it('the gate follows the live health flags (same rules as the API)', () => {
    const p = products['acme-core']!;
    const ok = {
      isPaused: false,
      underlyingOk: true,
      asyncExits: false,
      exitsLimited: false,
      lastBlock: 1n,
    };
    expect(embedGate(p, ok)).toEqual({ deposit: true, withdraw: true, reason: null });
    expect(embedGate(p, { ...ok, isPaused: true }).deposit).toBe(false);
    expect(embedGate(p, { ...ok, underlyingOk: false }).reason).toMatch(/not accepting deposits/);
    expect(embedGate({ ...p, status: 'deprecated' }, ok).deposit).toBe(false);
  });
});

describe('transaction reports', () => {
  const url = () => `/embed/api/${ids['acme-live']}/acme-core/transactions`;

  it('are stored like an inbound deposit.submitted, once per transaction', async () => {
    const body = { kind: 'deposit', tx_hash: TX, user_address: ADDR, amount: '25.5' };
    const first = await app.inject({
      method: 'POST',
      url: url(),
      payload: body,
      remoteAddress: from(),
    });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ success: true, duplicate: false });
    const again = await app.inject({
      method: 'POST',
      url: url(),
      payload: body,
      remoteAddress: from(),
    });
    expect(again.json()).toMatchObject({
      success: true,
      duplicate: true,
      event_id: first.json().event_id,
    });
    const stored = await createInboundEventsRepo(t.db).list({ partnerId: acme });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      environment: 'live',
      eventType: 'deposit.submitted',
      productId: products['acme-core']!.id,
      chainId: 31337,
      txHash: TX,
      idempotencyKey: `embed:31337:${TX}`,
    });
    expect(JSON.parse(stored[0]!.body).data).toEqual({
      product_slug: 'acme-core',
      chain_id: 31337,
      tx_hash: TX,
      user_address: ADDR,
      amount: '25.5',
    });
  });

  it('a malformed report is 400 invalid_payload naming the field, and stores nothing', async () => {
    const bad = await app.inject({
      method: 'POST',
      url: url(),
      payload: { kind: 'redeem', tx_hash: '0x12', user_address: ADDR, shares: '1' },
      remoteAddress: from(),
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ success: false, code: 'invalid_payload' });
    expect(bad.json().message).toMatch(/tx_hash/);
    const noAmount = await app.inject({
      method: 'POST',
      url: url(),
      payload: { kind: 'deposit', tx_hash: `0x${'cd'.repeat(32)}`, user_address: ADDR },
      remoteAddress: from(),
    });
    expect(noAmount.statusCode).toBe(400);
    expect(noAmount.json().code).toBe('invalid_payload');
    expect(noAmount.json().message).toMatch(/amount/);
    expect(await createInboundEventsRepo(t.db).list({ partnerId: acme })).toHaveLength(1);
  });
});

describe('limits', () => {
  it('embed traffic is limited per client address and never spends the partner key budget', async () => {
    const ip = '10.9.9.9';
    const budget = async () =>
      Number(
        (
          await app.inject({
            url: '/api/partner/products',
            headers: { 'x-api-key': apiKey },
            remoteAddress: '10.9.9.10',
          })
        ).headers['ratelimit-remaining'],
      );
    const before = await budget();
    const page = `/embed/api/${ids['acme-live']}/acme-core`;
    for (let i = 0; i < 40; i++) {
      expect((await app.inject({ url: page, remoteAddress: ip })).statusCode).toBe(200);
    }
    const limited = await app.inject({ url: page, remoteAddress: ip });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Static files are not counted; another address is not affected.
    expect((await app.inject({ url: '/embed/host.js', remoteAddress: ip })).statusCode).toBe(429);
    const assetUrl = [...builtEmbedAssets().files.keys()].find((k) => k.startsWith('assets/'))!;
    expect((await app.inject({ url: `/embed/${assetUrl}`, remoteAddress: ip })).statusCode).toBe(
      200,
    );
    expect((await app.inject({ url: page, remoteAddress: '10.9.9.11' })).statusCode).toBe(200);
    // 41 embed requests later, the key's budget moved by exactly the one API call measuring it.
    expect(await budget()).toBe(before - 1);
  });
});
