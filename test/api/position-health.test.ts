/**
 * position and health against a real local chain: exact figures from raw chain reads, every address
 * rule, the state rules, and the RPC failing (stopped, and a provider that never answers).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { encodeFunctionData, erc4626Abi, getAddress, formatUnits as viemFormatUnits } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainClient, createChainClient } from '../../src/chain/client.ts';
import { yieldEngineAbi } from '../../src/chain/generated/index.ts';
import { ensureLocalChain, type LocalChain } from '../../src/chain/local/ensure.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import type { buildApp } from '../../src/server/app.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { provisionFromDeployment } from '../helpers/local-products.ts';
import { waitFor } from '../helpers/process.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

const contracts: ContractCheck[] = [];

async function appFor(t: TestDatabase, client: ChainClient, chainId: number, evm = true) {
  const app = await buildTestApp({
    db: t.db,
    chains: [{ chainId, name: 'Local', evm, client }],
    chainReads: { timeoutMs: 1500, cacheMs: 0, headMs: 0 },
  });
  contracts.push(attachContractCheck(app));
  await app.ready();
  return app;
}

describe('position and health on a local chain', () => {
  let dataDir: string;
  let chain: LocalChain;
  let t: TestDatabase;
  let app: App;
  let client: ChainClient;
  let acmeLive: string;
  let acmeTest: string;
  const get = (url: string, key = acmeLive) => app.inject({ url, headers: { 'x-api-key': key } });

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'pys-pos-'));
    chain = await ensureLocalChain({ dataDir, seed: 'position', days: 3, port: 0 });
    t = await freshDatabase('pglite');
    const { partners } = await provisionFromDeployment(t.db, chain.deployment);
    const keys = createApiKeysRepo(t.db);
    acmeLive = (await keys.create(partners.get('Acme Wallet')!, 'live')).key;
    acmeTest = (await keys.create(partners.get('Acme Wallet')!, 'test')).key;
    const d = chain.deployment;
    client = createChainClient({
      chainId: d.chainId,
      name: 'local',
      rpcUrls: [d.rpcUrl],
    });
    app = await appFor(t, client, d.chainId);
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await chain?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const engine = (slug: string) => chain.deployment.engines[slug]!;

  it('answers a holder position that equals raw chain reads, in whole units', async () => {
    const e = engine('acme-live-usdc-core');
    const holder = e.holders[0]!;
    const res = await get(
      `/api/partner/products/${e.slug}/position?address=${holder.toLowerCase()}`,
    );
    expect(res.statusCode).toBe(200);
    const shares = await client.readContract({
      address: e.address,
      abi: erc4626Abi,
      functionName: 'balanceOf',
      args: [holder],
    });
    const assets = await client.readContract({
      address: e.address,
      abi: erc4626Abi,
      functionName: 'convertToAssets',
      args: [shares],
    });
    expect(shares).toBeGreaterThan(0n);
    const body = res.json();
    expect(body).toEqual({
      success: true,
      data: {
        wallet_address: getAddress(holder),
        product_slug: e.slug,
        shares: viemFormatUnits(shares, 12),
        assets: viemFormatUnits(assets, 6),
        usd_value: body.data.usd_value,
        // Added fields (#34; DECISIONS' pending_redeems): the wallet's redeem requests in
        // flight; none here.
        pending_redeems: [],
        redeem_requests: [],
      },
    });
    // usd_value: assets × 1 (USD-pegged), toward zero to cents.
    const [whole, frac = ''] = viemFormatUnits(assets, 6).split('.');
    const cents = frac.slice(0, 2).replace(/0+$/, '');
    expect(body.data.usd_value).toBe(cents ? `${whole}.${cents}` : whole);
    expect(res.headers['cache-control']).toBe('private, max-age=30');
  });

  it('renders a cached reading once: same bytes again, each wallet its own, a new USD price at once', async () => {
    // Chain reads cached as the service caches them (the other tests read afresh every time).
    const cached = await buildTestApp({
      db: t.db,
      chains: [{ chainId: chain.deployment.chainId, name: 'Local', evm: true, client }],
      chainReads: { timeoutMs: 1500, cacheMs: 60_000, headMs: 60_000 },
    });
    contracts.push(attachContractCheck(cached));
    try {
      const e = engine('acme-live-usdc-core');
      const [a, b] = [e.holders[0]!, e.holders[1]!];
      const ask = async (wallet: string) => {
        const res = await cached.inject({
          url: `/api/partner/products/${e.slug}/position?address=${wallet.toLowerCase()}`,
          headers: { 'x-api-key': acmeLive },
        });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        return res;
      };
      const first = await ask(a);
      const again = await ask(a);
      expect(again.body).toBe(first.body);
      const other = (await ask(b)).json().data;
      expect(other.wallet_address).toBe(getAddress(b));
      const shares = await client.readContract({
        address: e.address,
        abi: erc4626Abi,
        functionName: 'balanceOf',
        args: [b],
      });
      expect(other.shares).toBe(viemFormatUnits(shares, 12));
      // The product's price changes while the chain reading stays cached: the next answers use it.
      const assets = first.json().data.assets as string;
      await t.db.query(`UPDATE products SET usd_price = '2' WHERE slug = $1`, [e.slug]);
      const repriced = await waitFor(
        async () => {
          const data = (await ask(a)).json().data;
          return data.usd_value !== first.json().data.usd_value ? data : undefined;
        },
        10_000,
        'the new USD price in the position',
      );
      expect(repriced.assets).toBe(assets);
      const [whole, frac = ''] = assets.split('.');
      const doubled = (BigInt(whole!) * 1_000_000n + BigInt(frac.padEnd(6, '0'))) * 2n;
      const cents = (doubled / 10_000n) % 100n;
      expect(repriced.usd_value).toBe(
        `${doubled / 1_000_000n}${cents === 0n ? '' : `.${String(cents).padStart(2, '0').replace(/0$/, '')}`}`,
      );
    } finally {
      await t.db.query(`UPDATE products SET usd_price = NULL WHERE slug = $1`, [
        engine('acme-live-usdc-core').slug,
      ]);
      await cached.close();
    }
  });

  it('renders a cached health reading once, and a product change at once', async () => {
    const cached = await buildTestApp({
      db: t.db,
      chains: [{ chainId: chain.deployment.chainId, name: 'Local', evm: true, client }],
      chainReads: { timeoutMs: 1500, cacheMs: 60_000, headMs: 60_000 },
    });
    contracts.push(attachContractCheck(cached));
    const e = engine('acme-live-usdc-core');
    try {
      const ask = async () => {
        const res = await cached.inject({
          url: `/api/partner/products/${e.slug}/health`,
          headers: { 'x-api-key': acmeLive },
        });
        expect(res.statusCode).toBe(200);
        return res;
      };
      const first = await ask();
      expect((await ask()).body).toBe(first.body);
      expect(first.json().data.notes).not.toContain('Deprecated');
      // The reading stays cached; the product's state is the read model's, seen at once.
      await t.db.query(`UPDATE products SET status = 'deprecated' WHERE slug = $1`, [e.slug]);
      const deprecated = await waitFor(
        async () => {
          const data = (await ask()).json().data;
          return data.notes.includes('Deprecated') ? data : undefined;
        },
        10_000,
        'the deprecation in the health notes',
      );
      expect(deprecated.last_block).toBe(first.json().data.last_block);
    } finally {
      await t.db.query(`UPDATE products SET status = 'active' WHERE slug = $1`, [e.slug]);
      await cached.close();
    }
  });

  it('accepts lower-case, upper-case and valid checksum addresses; answers zero for a non-holder', async () => {
    const e = engine('acme-live-usdc-core');
    const holder = getAddress(e.holders[0]!);
    for (const form of [holder, holder.toLowerCase(), `0x${holder.slice(2).toUpperCase()}`]) {
      const res = await get(`/api/partner/products/${e.slug}/position?address=${form}`);
      expect(res.statusCode, form).toBe(200);
      expect(res.json().data.wallet_address).toBe(holder);
    }
    const nobody = await get(
      `/api/partner/products/${e.slug}/position?address=0x${'00'.repeat(19)}ab`,
    );
    expect(nobody.json().data).toMatchObject({ shares: '0', assets: '0', usd_value: '0' });
  });

  it.each([
    ['missing', '', 'invalid_address'],
    ['empty', '?address=', 'invalid_address'],
    ['no 0x', `?address=${'a'.repeat(40)}`, 'invalid_address'],
    ['41 hex digits', `?address=0x${'a'.repeat(41)}`, 'invalid_address'],
    ['39 hex digits', `?address=0x${'a'.repeat(39)}`, 'invalid_address'],
    ['non-hex', `?address=0x${'g'.repeat(40)}`, 'invalid_address'],
    ['bad checksum', '?address=0x52908400098527886E0F7030069857D2E4169Ee7', 'chain_not_supported'],
  ])('answers 400 for a %s address', async (_n, query, code) => {
    const res = await get(`/api/partner/products/acme-live-usdc-core/position${query}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ success: false, code, message: expect.any(String) });
  });

  it('checks the address shape before the slug', async () => {
    const res = await get('/api/partner/products/no-such-product/position?address=xyz');
    expect(res.json().code).toBe('invalid_address');
  });

  it('applies the state rules: pending 409; paused and deprecated keep serving', async () => {
    const pending = Object.values(chain.deployment.pending).find(
      (p) => p.partner === 'Acme Wallet' && p.environment === 'live',
    )!;
    const addr = `0x${'00'.repeat(19)}01`;
    expect(
      (await get(`/api/partner/products/${pending.slug}/position?address=${addr}`)).json().code,
    ).toBe('engine_not_deployed');
    expect((await get(`/api/partner/products/${pending.slug}/health`)).json().code).toBe(
      'engine_not_deployed',
    );
    for (const slug of ['acme-live-usdc-boost', 'acme-live-usdc-legacy']) {
      const e = engine(slug);
      expect(
        (await get(`/api/partner/products/${slug}/position?address=${addr}`)).statusCode,
        slug,
      ).toBe(200);
      const h = await get(`/api/partner/products/${slug}/health`);
      expect(h.statusCode, slug).toBe(200);
      expect(h.json().data.is_paused, slug).toBe(e.status === 'paused');
    }
    // The own product in the other environment is not found; a sandbox key sees its own.
    expect((await get('/api/partner/products/acme-test-usdc-core/health')).json().code).toBe(
      'not_found',
    );
    expect(
      (await get('/api/partner/products/acme-test-usdc-core/health', acmeTest)).statusCode,
    ).toBe(200);
  });

  it('answers health flags read from the chain', async () => {
    const res = await get('/api/partner/products/acme-live-usdc-core/health');
    expect(res.statusCode).toBe(200);
    const head = await client.getBlockNumber({ cacheTime: 0 });
    expect(res.json().data).toMatchObject({ is_paused: false, underlying_ok: true, notes: '' });
    expect(BigInt(res.json().data.last_block)).toBeLessThanOrEqual(head);
    expect(res.headers['cache-control']).toBe('private, max-age=60');
  });

  it('announces a scheduled fee increase in the notes; the fee fields keep the fees in force', async () => {
    const slug = 'acme-live-usdc-core';
    const before = (await get(`/api/partner/products/${slug}`)).json().data;
    const deployer = chain.deployment.deployer;
    const rpc = (method: string, params: unknown[]) => client.request({ method, params } as never);
    const send = async (data: `0x${string}`) => {
      const hash = (await rpc('eth_sendTransaction', [
        { from: deployer, to: engine(slug).address, data },
      ])) as `0x${string}`;
      await client.waitForTransactionReceipt({ hash });
    };
    await send(
      encodeFunctionData({
        abi: yieldEngineAbi,
        functionName: 'setFees',
        args: [before.service_fee_bps, before.partner_fee_bps + 100],
      }),
    );
    try {
      const { timestamp } = await client.getBlock();
      const at = new Date(Number(timestamp + 7n * 86_400n) * 1000).toISOString();
      const health = (await get(`/api/partner/products/${slug}/health`)).json().data;
      expect(health.notes).toBe(
        `Fee change scheduled: service ${before.service_fee_bps} bps, partner ${before.partner_fee_bps + 100} bps, may apply from ${at.replace('.000Z', 'Z')}; the fees in force apply until then.`,
      );
      const after = (await get(`/api/partner/products/${slug}`)).json().data;
      expect(after.partner_fee_bps).toBe(before.partner_fee_bps);
    } finally {
      await send(encodeFunctionData({ abi: yieldEngineAbi, functionName: 'cancelFeeChange' }));
    }
    expect((await get(`/api/partner/products/${slug}/health`)).json().data.notes).toBe('');
  });

  it('answers chain_not_supported for a product on a non-EVM chain', async () => {
    const other = await appFor(t, client, chain.deployment.chainId, false);
    const res = await other.inject({
      url: `/api/partner/products/acme-live-usdc-core/position?address=0x${'00'.repeat(20)}`,
      headers: { 'x-api-key': acmeLive },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('chain_not_supported');
    await other.close();
  });

  it('answers 503 chain_rpc_unavailable, never 500, when the provider hangs', async () => {
    // A real TCP server on loopback that accepts connections and never answers: a hung provider.
    const sockets: Socket[] = [];
    const hung: Server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    const port = (hung.address() as { port: number }).port;
    const hungClient = createChainClient({
      chainId: chain.deployment.chainId,
      name: 'hung',
      rpcUrls: [`http://127.0.0.1:${port}`],
    });
    const slow = await appFor(t, hungClient, chain.deployment.chainId);
    const started = Date.now();
    const res = await slow.inject({
      url: '/api/partner/products/acme-live-usdc-core/health',
      headers: { 'x-api-key': acmeLive },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('chain_rpc_unavailable');
    expect(Date.now() - started).toBeLessThan(5000);
    await slow.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => hung.close(() => r()));
  });

  it('answers 503 chain_rpc_unavailable when the node is stopped', async () => {
    await chain.stop();
    const res = await get(
      '/api/partner/products/acme-live-usdc-core/position?address=0x' + '00'.repeat(20),
    );
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ success: false, code: 'chain_rpc_unavailable' });
    const h = await get('/api/partner/products/acme-live-usdc-core/health');
    expect(h.statusCode).toBe(503);
  });

  it('every response above matched the OpenAPI document', () => {
    expect(contracts.reduce((n, c) => n + c.checked(), 0)).toBeGreaterThan(20);
    for (const c of contracts) c.assertClean();
  });
});
