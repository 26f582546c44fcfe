/**
 * The SDK against the real service on a real local chain: the app listening on a loopback port
 * (PGlite, the demo deployment on anvil), every client method compared with what the route
 * answers, typed errors with their request ids, the inbound endpoint (signature, idempotency,
 * conflicts) through sendInbound, and the engine helpers with a dev wallet that signs locally:
 * approve + deposit (the preview equals the shares minted, and the API's position shows them),
 * redeem and withdraw on a synchronous engine, request and claim on an asynchronous one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  formatUnits,
  http,
  maxUint256,
  parseAbi,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../../src/chain/client.ts';
import { DEV_MNEMONIC } from '../../../src/chain/local/accounts.ts';
import { ensureLocalChain, type LocalChain } from '../../../src/chain/local/ensure.ts';
import { createApiKeysRepo } from '../../../src/db/api-keys.ts';
import { createEventsRepo } from '../../../src/db/events.ts';
import { createInboundSecretsRepo } from '../../../src/db/inbound-secrets.ts';
import { createProductsRepo } from '../../../src/db/products.ts';
import { buildApp } from '../../../src/server/app.ts';
import { outboundPayload } from '../../../src/webhooks/event-catalogue.ts';
import { createSecretBox } from '../../../src/webhooks/secret-box.ts';
import { freshDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { provisionFromDeployment } from '../../../test/helpers/local-products.ts';
import { captureLogger } from '../../../test/helpers/logs.ts';
import { daysEnding, insertSnapshots } from '../../../test/helpers/snapshots.ts';
import { createEngineHelpers, erc20Abi, sendCalls } from '../src/engine/index.ts';
import { ApiError, PartnerYieldClient, type RetryInfo } from '../src/index.ts';

type App = Awaited<ReturnType<typeof buildApp>>;

const CORE = 'acme-live-usdc-core'; // sync, active
const FLEX = 'acme-live-usdc-flex'; // async, active
const BOOST = 'acme-live-usdc-boost'; // paused
const NEXT = 'acme-live-usdc-next'; // pending_deploy

describe('the SDK against the real service', () => {
  let dataDir: string;
  let chain: LocalChain;
  let t: TestDatabase;
  let app: App;
  let baseUrl: string;
  let apiKey: string;
  let inboundSecret: string;
  let client: PartnerYieldClient;
  const retries: RetryInfo[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'pys-sdk-'));
    chain = await ensureLocalChain({ dataDir, seed: 'sdk', days: 2, port: 0 });
    t = await freshDatabase('pglite');
    const { partners, products } = await provisionFromDeployment(t.db, chain.deployment);
    const acme = partners.get('Acme Wallet')!;
    apiKey = (await createApiKeysRepo(t.db).create(acme, 'live')).key;
    const box = createSecretBox(randomBytes(32));
    inboundSecret = (await createInboundSecretsRepo(t.db, box).set(acme, 'live')).secret;
    const days = daysEnding(new Date(Date.now() - 86_400_000).toISOString().slice(0, 10), 4);
    await insertSnapshots(
      t.db,
      products.get(CORE)!.id,
      days.map((date, i) => ({
        date,
        totalAssets: 1_000_000_000n + BigInt(i) * 1000n,
        underlyingApy: i === 0 ? null : '0.051234',
        netApy: i === 0 ? null : '0.047',
        dailyYield: i === 0 ? null : 1000n,
        dailyPartnerFee: i === 0 ? null : 25n,
        partnerFeeTotal: BigInt(i) * 25n,
      })),
    );
    const d = chain.deployment;
    app = await buildApp({
      db: t.db,
      logger: captureLogger().logger,
      secretBox: box,
      chains: [
        {
          chainId: d.chainId,
          name: 'Local',
          evm: true,
          client: createChainClient({ chainId: d.chainId, name: 'local', rpcUrls: [d.rpcUrl] }),
        },
      ],
      chainReads: { timeoutMs: 3000, cacheMs: 0, headMs: 0 },
      readCache: { pollMs: 50 },
    });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    client = new PartnerYieldClient({
      baseUrl,
      apiKey,
      inboundSecret,
      // A retry would show here; none of these calls may need one.
      onRetry: (info) => retries.push(info),
      sleep: async () => {},
    });
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await chain?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** What the route itself answers, for comparison. */
  const routeData = async (url: string) => {
    const res = await app.inject({ url, headers: { 'x-api-key': apiKey } });
    expect(res.statusCode, url).toBe(200);
    return res.json().data;
  };

  describe('client', () => {
    it('answers every read operation with the data the route serves', async () => {
      const p = `/api/partner/products`;
      expect(await client.listProducts()).toEqual(await routeData(p));
      expect(await client.getProduct(CORE)).toEqual(await routeData(`${p}/${CORE}`));
      const history = await client.getApyHistory(CORE, { days: 7 });
      expect(history).toHaveLength(3);
      expect(history).toEqual(await routeData(`${p}/${CORE}/apy-history?days=7`));
      const fees = await client.getFeeStats(CORE);
      expect(fees.length).toBeGreaterThan(0);
      expect(fees).toEqual(await routeData(`${p}/${CORE}/fee-stats`));
      const projection = await client.calculateYield(CORE, { amount: '1000' });
      expect(projection).toMatchObject({
        principal: '1000',
        net_apy_for_user: '0.047000',
        annual_yield: '47',
      });
      expect(projection).toEqual(await routeData(`${p}/${CORE}/yield-calc?amount=1000`));
      const health = await client.getProductHealth(CORE);
      expect(health).toMatchObject({ is_paused: false, underlying_ok: true });
      expect(health.last_block).toBeGreaterThan(0);
      const holder = chain.deployment.engines[CORE]!.holders[0]!;
      expect(await client.getPosition(CORE, holder)).toEqual(
        await routeData(`${p}/${CORE}/position?address=${holder}`),
      );
      expect(await client.health()).toEqual({ status: 'ok' });
      expect(retries).toEqual([]);
    });

    it('iterates the events feed page by page, then forward from the last cursor', async () => {
      const acme = (await createProductsRepo(t.db).getBySlug(CORE))!;
      const events = createEventsRepo(t.db);
      const store = async (n: number, from: number) => {
        for (let i = from; i < from + n; i++) {
          await events.insert({
            partnerId: acme.partnerId,
            environment: 'live',
            productId: acme.id,
            eventType: 'vault_pause',
            dedupeKey: `sdk-feed:${i}`,
            payload: outboundPayload('vault_pause', { slug: CORE, status: 'paused' }),
            occurredAt: new Date(),
          });
        }
      };
      await store(7, 0);
      const all = (await routeData('/api/partner/events?order=oldest_first&limit=100')).events;
      const pages = [];
      let cursor: string | undefined;
      for await (const page of client.iterateEvents({ order: 'oldest_first', limit: '3' })) {
        pages.push(page);
        cursor = page.next_cursor ?? cursor;
      }
      const full = Math.ceil(all.length / 3);
      expect(pages.map((p) => p.events.length)).toEqual(
        Array.from({ length: full }, (_, i) => (i < full - 1 ? 3 : all.length - 3 * (full - 1))),
      );
      expect(pages.flatMap((p) => p.events)).toEqual(all);
      // Later, from the kept cursor: only what was stored since.
      await store(2, 7);
      const since = [];
      for await (const page of client.iterateEvents({ cursor, limit: '3' })) {
        since.push(...page.events);
      }
      expect(since.map((e) => e.payload)).toHaveLength(2);
      expect(since[0]!.partner_sequence).toBeGreaterThan(all.at(-1)!.partner_sequence);
      // Newest first is the default order.
      const newest = await client.listEvents({ limit: '1' });
      expect(newest.events[0]!.id).toBe(since[1]!.id);
      expect(retries).toEqual([]);
    });

    it('throws typed errors to switch on, with the request id, and retries none of them', async () => {
      const codeOf = async (call: Promise<unknown>) => {
        const err = await call.catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ApiError);
        const e = err as ApiError;
        expect(e.requestId).toMatch(/^req_/);
        return [e.status, e.code];
      };
      const stranger = new PartnerYieldClient({
        baseUrl,
        apiKey: 'svc_live_nope',
        sleep: async () => {},
      });
      expect(await codeOf(stranger.listProducts())).toEqual([401, 'invalid_api_key']);
      expect(await codeOf(client.getProduct('no-such-product'))).toEqual([404, 'not_found']);
      expect(await codeOf(client.getPosition(CORE, '0x1234'))).toEqual([400, 'invalid_address']);
      expect(await codeOf(client.getApyHistory(CORE, { days: 5 as never }))).toEqual([
        400,
        'invalid_days',
      ]);
      expect(await codeOf(client.calculateYield(CORE, { amount: '-1' }))).toEqual([
        400,
        'invalid_amount',
      ]);
      expect(await codeOf(client.getProductHealth(NEXT))).toEqual([409, 'engine_not_deployed']);
      expect(await codeOf(client.calculateYield(BOOST, { amount: '1' }))).toEqual([
        503,
        'product_paused',
      ]);
      expect(retries).toEqual([]);
    });
  });

  describe('inbound', () => {
    it('sends a signed event once; the same key again is a duplicate, another body a conflict', async () => {
      const key = `sdk-${randomBytes(6).toString('hex')}`;
      const event = {
        type: 'ping' as const,
        data: { hello: 'sdk' },
        occurred_at: '2026-11-22T20:00:00Z',
        idempotencyKey: key,
      };
      const first = await client.sendInbound(event);
      expect(first).toEqual({ success: true, event_id: expect.any(Number), duplicate: false });
      expect(await client.sendInbound(event)).toEqual({ ...first, duplicate: true });
      await expect(
        client.sendInbound({ ...event, data: { hello: 'other' } }),
      ).rejects.toMatchObject({
        status: 409,
        code: 'idempotency_conflict',
      });
    });

    it('asks for occurred_at with a key of the caller, so that sending the event again is a duplicate', async () => {
      // Found by QA: with "now" as the default, the documented resend of an event under its key
      // was a new body, answered 409 idempotency_conflict, which the docs call final.
      const idempotencyKey = `sdk-${randomBytes(6).toString('hex')}`;
      await expect(
        // @ts-expect-error a key of the caller comes with occurred_at (the types say so too)
        client.sendInbound({ type: 'ping', data: { hello: 'sdk' }, idempotencyKey }),
      ).rejects.toMatchObject({ name: 'PartnerYieldError', code: 'missing_occurred_at' });
      const event = {
        type: 'ping' as const,
        data: { hello: 'sdk' },
        idempotencyKey,
        occurred_at: new Date(),
      };
      const first = await client.sendInbound(event);
      expect(first.duplicate).toBe(false);
      // Later, say after a crash: the same event rebuilt from what was kept.
      const again = await client.sendInbound({
        ...event,
        occurred_at: new Date(event.occurred_at),
      });
      expect(again).toEqual({ ...first, duplicate: true });
    });

    it('is refused under another secret', async () => {
      await expect(
        client.sendInbound({ type: 'ping', data: {} }, { secret: 'whsec_not-the-secret' }),
      ).rejects.toMatchObject({ status: 401, code: 'signature_mismatch' });
    });
  });

  describe('engine helpers on anvil', () => {
    const wallet = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 12 }); // a spare dev account
    const clientsFor = (url: string) => ({
      publicClient: createPublicClient({ transport: http(url) }),
      walletClient: createWalletClient({ account: wallet, transport: http(url) }),
    });
    let publicClient: ReturnType<typeof clientsFor>['publicClient'];
    let walletClient: ReturnType<typeof clientsFor>['walletClient'];
    let rpc: (method: string, params: unknown[]) => Promise<unknown>;
    const ONE = 1_000_000n; // one USDC

    beforeAll(async () => {
      const d = chain.deployment;
      ({ publicClient, walletClient } = clientsFor(d.rpcUrl));
      rpc = (method, params) =>
        publicClient.request({ method: method as never, params: params as never });
      // The deployer mints test dollars to the spare account.
      const deployer = createWalletClient({
        account: mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 0 }),
        transport: http(d.rpcUrl),
      });
      const hash = await deployer.writeContract({
        chain: null,
        address: d.asset.address,
        abi: parseAbi(['function mint(address to, uint256 amount)']),
        functionName: 'mint',
        args: [wallet.address, 10_000n * ONE],
      });
      await publicClient.waitForTransactionReceipt({ hash });
    });

    /** Mines the next transaction at a known time, so a `pending` preview prices that very block. */
    const pinNextBlock = async () => {
      const latest = await publicClient.getBlock();
      await rpc('evm_setNextBlockTimestamp', [Number(latest.timestamp) + 12]);
    };

    it('approves then deposits; the preview equals the shares minted; the API shows the position', async () => {
      const engine = createEngineHelpers(await client.getProduct(CORE), publicClient);
      const assets = 250n * ONE;
      const plan = await engine.buildDeposit({ owner: wallet.address, assets });
      expect(plan.calls.map((c) => c.kind)).toEqual(['approve', 'deposit']);
      expect(plan.previewShares).toBeGreaterThan(0n);
      await sendCalls(walletClient, publicClient, plan.calls.slice(0, 1));
      await pinNextBlock();
      const preview = await engine.previewDeposit(assets, { blockTag: 'pending' });
      const [receipt] = await sendCalls(walletClient, publicClient, plan.calls.slice(1));
      const [deposit] = engine.decodeReceipt(receipt!).deposits;
      expect(deposit).toMatchObject({ owner: wallet.address, assets });
      expect(deposit!.shares).toBe(preview);
      // The allowance was exactly the amount: none is left standing.
      expect(
        await publicClient.readContract({
          address: chain.deployment.asset.address,
          abi: erc20Abi,
          functionName: 'allowance',
          args: [wallet.address, chain.deployment.engines[CORE]!.address],
        }),
      ).toBe(0n);

      const { shares } = await engine.balances(wallet.address);
      expect(shares).toBe(preview);
      const position = await client.getPosition(CORE, wallet.address);
      const shareDecimals = Number(
        await publicClient.readContract({
          address: chain.deployment.engines[CORE]!.address,
          abi: parseAbi(['function decimals() view returns (uint8)']),
          functionName: 'decimals',
        }),
      );
      expect(position).toMatchObject({
        wallet_address: wallet.address,
        product_slug: CORE,
        shares: formatUnits(shares, shareDecimals),
      });

      // The partner tells the service about the transaction it broadcast.
      const ack = await client.sendInbound({
        type: 'deposit.submitted',
        data: {
          product_slug: CORE,
          chain_id: chain.deployment.chainId,
          tx_hash: receipt!.transactionHash,
          user_address: wallet.address,
          amount: '250',
        },
      });
      expect(ack).toMatchObject({ success: true, duplicate: false });
    });

    it('skips the approve when the allowance already covers the deposit', async () => {
      const engine = createEngineHelpers(await client.getProduct(CORE), publicClient);
      const approve = await walletClient.writeContract({
        chain: null,
        address: chain.deployment.asset.address,
        abi: erc20Abi,
        functionName: 'approve',
        args: [chain.deployment.engines[CORE]!.address, maxUint256],
      });
      await publicClient.waitForTransactionReceipt({ hash: approve });
      const plan = await engine.buildDeposit({ owner: wallet.address, assets: 10n * ONE });
      expect(plan.calls.map((c) => c.kind)).toEqual(['deposit']);
      await sendCalls(walletClient, publicClient, plan.calls);
    });

    it('redeems and withdraws on a synchronous engine at the previewed amounts', async () => {
      const engine = createEngineHelpers(await client.getProduct(CORE), publicClient);
      const { shares } = await engine.balances(wallet.address);
      const half = shares / 2n;
      const redeem = await engine.buildRedeem({ owner: wallet.address, shares: half });
      expect(redeem).toMatchObject({ async: false });
      expect(redeem.calls.map((c) => c.kind)).toEqual(['redeem']);
      await pinNextBlock();
      const expectedAssets = await engine.previewRedeem(half, { blockTag: 'pending' });
      const [r1] = await sendCalls(walletClient, publicClient, redeem.calls);
      expect(engine.decodeReceipt(r1!).withdrawals[0]).toMatchObject({
        owner: wallet.address,
        shares: half,
        assets: expectedAssets,
      });

      const withdraw = await engine.buildWithdraw({ owner: wallet.address, assets: 5n * ONE });
      await pinNextBlock();
      const expectedShares = await engine.previewWithdraw(5n * ONE, { blockTag: 'pending' });
      const [r2] = await sendCalls(walletClient, publicClient, withdraw.calls);
      expect(engine.decodeReceipt(r2!).withdrawals[0]).toMatchObject({
        assets: 5n * ONE,
        shares: expectedShares,
      });
    });

    it('requests a redeem on an asynchronous engine and claims it once settled', async () => {
      const engine = createEngineHelpers(await client.getProduct(FLEX), publicClient);
      expect(await engine.isAsync()).toBe(true);
      const deposit = await engine.buildDeposit({ owner: wallet.address, assets: 100n * ONE });
      await sendCalls(walletClient, publicClient, deposit.calls);
      const { shares } = await engine.balances(wallet.address);
      await expect(
        engine.buildWithdraw({ owner: wallet.address, assets: ONE }),
      ).rejects.toMatchObject({ code: 'async_redeem_required' });

      const plan = await engine.buildRedeem({ owner: wallet.address, shares });
      expect(plan).toMatchObject({ async: true });
      expect(plan.calls.map((c) => c.kind)).toEqual(['requestRedeem']);
      const [requested] = await sendCalls(walletClient, publicClient, plan.calls);
      const [request] = engine.decodeReceipt(requested!).redeemRequests;
      expect(request).toMatchObject({ owner: wallet.address, shares });
      const at = await engine.claimableAt(request!.requestId);
      await rpc('evm_setNextBlockTimestamp', [Number(at)]);
      const before = await publicClient.readContract({
        address: chain.deployment.asset.address,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [wallet.address],
      });
      const [claimed] = await sendCalls(
        walletClient,
        publicClient,
        engine.buildClaim({ requestId: request!.requestId, receiver: wallet.address }).calls,
      );
      const [claim] = engine.decodeReceipt(claimed!).claims;
      expect(claim).toMatchObject({ requestId: request!.requestId, receiver: wallet.address });
      expect(claim!.assets).toBeGreaterThan(0n);
      const after = await publicClient.readContract({
        address: chain.deployment.asset.address,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [wallet.address],
      });
      expect(after - before).toBe(claim!.assets);
    });

    it('sends each call with a gas margin: a call mined after time passed still lands', async () => {
      // An engine call accrues fees and interest for the time since the last one, so it costs more
      // gas when mined later than estimated. Here the estimate prices the latest block (where the
      // previous call left no fee due) and then time really passes on the chain (an hour) before
      // the send, so the mined call pays the accrual: with no margin the exact estimate runs out
      // of gas. (A `pending` estimate's price depends on whether a second has passed since that
      // block, which is why the margin has a fixed part for the accrual.)
      const engine = createEngineHelpers(await client.getProduct(FLEX), publicClient);
      const later = {
        waitForTransactionReceipt: publicClient.waitForTransactionReceipt,
        estimateGas: async (args: Parameters<typeof publicClient.estimateGas>[0]) => {
          const gas = await publicClient.estimateGas({
            ...args,
            blockTag: 'latest',
          } as typeof args);
          await rpc('evm_increaseTime', [3600]);
          return gas;
        },
      } as Pick<typeof publicClient, 'waitForTransactionReceipt' | 'estimateGas'>;
      await sendCalls(
        walletClient,
        publicClient,
        (await engine.buildDeposit({ owner: wallet.address, assets: 100n * ONE })).calls,
      );
      const half = (await engine.balances(wallet.address)).shares / 2n;
      const redeem = await engine.buildRedeem({ owner: wallet.address, shares: half });
      await expect(
        sendCalls(walletClient, later, redeem.calls, { gasMarginPercent: 0, accrualGas: 0n }),
      ).rejects.toMatchObject({ code: 'transaction_reverted' });
      const [receipt] = await sendCalls(walletClient, later, redeem.calls);
      expect(engine.decodeReceipt(receipt!).redeemRequests[0]).toMatchObject({ shares: half });
    });

    it('refuses to build a deposit into a paused or undeployed product, with the API codes', async () => {
      const paused = createEngineHelpers(await client.getProduct(BOOST), publicClient);
      await expect(
        paused.buildDeposit({ owner: wallet.address, assets: ONE }),
      ).rejects.toMatchObject({ code: 'product_paused' });
      const pending = createEngineHelpers(await client.getProduct(NEXT), publicClient);
      await expect(
        pending.buildDeposit({ owner: wallet.address, assets: ONE }),
      ).rejects.toMatchObject({ code: 'engine_not_deployed' });
    });
  });
});
