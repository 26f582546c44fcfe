/**
 * The embed end to end in real Chromium against the local chain (anvil) and the real service
 * (api + worker, in this process, on the demo): the demo's host page on one loopback origin
 * (http://localhost:PORT) frames the embed on another (http://127.0.0.1:PORT). A test wallet
 * (wallet.ts) signs in Node with an anvil account and records every call.
 *
 * Screenshots go to a temporary directory; with EMBED_SCREENSHOTS=1 they are written to
 * docs/embed/ (how the committed ones were made). Figures printed: the bundle size and the first
 * render (iframe navigation to the app's first render) on a warm server.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import {
  type Address,
  decodeEventLog,
  erc4626Abi,
  formatUnits,
  getAddress,
  type Hex,
  parseUnits,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gasLimit } from '../../embed-app/src/gas.ts';
import {
  batchCallAccountBytecode,
  yieldEngineAbi,
  yieldVaultAbi,
} from '../../src/chain/generated/index.ts';
import { LOCAL_ROLES } from '../../src/chain/local/accounts.ts';
import { loadConfig } from '../../src/config.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningService, startService } from '../../src/main.ts';
import { createSecretBox, masterKeyFor } from '../../src/webhooks/secret-box.ts';
import { type HttpsReceiver, startHttpsReceiver } from '../helpers/https-receiver.ts';
import { waitFor } from '../helpers/process.ts';
import { chromiumMissing, launchChromium } from '../portal/browser.ts';
import { builtEmbedAssets } from './build.ts';
import { createTestWallet, type TestWallet } from './wallet.ts';

const SHOTS =
  process.env.EMBED_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/embed/', import.meta.url))
    : mkdtempSync(path.join(tmpdir(), 'pys-embed-shots-'));
const TLS_CA = fileURLToPath(new URL('../fixtures/tls/ca.pem', import.meta.url));
const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
);
const APPROVE = '0x095ea7b3';
const DEPOSIT = '0x6e553f65';

interface DemoEnv {
  products: Record<'active' | 'active_async' | 'paused' | 'deprecated', string>;
  embed: { url: string; host_example_url: string };
}

const skip = chromiumMissing();
const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-embed-e2e-'));
let service: RunningService;
let browser: Browser;
let receiver: HttpsReceiver;
let otherOrigin: Server;
let rpcUrl: string;
let chainId: number;
let live: DemoEnv;
let partnerId: string;
let apiKey: string;
let nextSpare = 0;
/** The code the batching test wallet delegates to (EIP-7702), deployed for the tests. */
let batchAccount: Address;

async function rpc(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** Sends from an unlocked anvil account and waits for success. */
async function sendFrom(from: Address, to: string, data: Hex) {
  const hash = (await rpc('eth_sendTransaction', [{ from, to, data }])) as Hex;
  const receipt = (await waitFor(
    async () => (await rpc('eth_getTransactionReceipt', [hash])) ?? undefined,
    30_000,
    'a receipt',
  )) as { status: Hex };
  if (receipt.status !== '0x1') throw new Error(`setup transaction reverted: ${hash}`);
}

/**
 * A fresh wallet (a spare anvil account: no allowance yet) holding `usdc` of the demo asset. Kinds:
 * `plain` signs transactions only (no EIP-5792 batching, no EIP-712 typed data: approve + deposit);
 * `permit` also signs typed data (the demo asset's permit: one signature, one transaction);
 * `batch` batches atomically (EIP-5792 through an EIP-7702 account: one confirmation).
 */
async function fundedWallet(
  assetAddress: Address,
  usdc: bigint,
  kind: 'plain' | 'permit' | 'batch' = 'plain',
): Promise<TestWallet> {
  const index = 12 + nextSpare++;
  const wallet = createTestWallet({
    rpcUrl,
    chainId,
    index,
    ...(kind === 'plain' ? { typedData: false } : {}),
    ...(kind === 'batch' ? { batchAccount } : {}),
  });
  const { encodeFunctionData, erc20Abi } = await import('viem');
  // Gas money: the chain funds dev accounts up to index 19; later wallets get theirs here.
  await rpc('anvil_setBalance', [wallet.address, '0x56bc75e2d63100000']);
  await sendFrom(
    LOCAL_ROLES.users[0],
    assetAddress,
    encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [wallet.address, usdc] }),
  );
  return wallet;
}

async function productRow(slug: string) {
  const { rows } = await service.db.query<{
    engine_address: Address;
    asset_address: Address;
    underlying_vault_address: Address;
    share_decimals: number;
  }>('SELECT * FROM products WHERE slug = $1', [slug]);
  return rows[0]!;
}

async function openHost(
  context: BrowserContext,
  slug: string,
  query = '',
): Promise<{ page: Page; frame: Frame }> {
  const page = await context.newPage();
  page.on('console', (m) => {
    if (process.env.EMBED_DEBUG) console.log(`[page ${m.type()}] ${m.text()}`);
  });
  page.on('pageerror', (e) => {
    if (process.env.EMBED_DEBUG) console.log(`[page error] ${e.message}`);
  });
  const url = new URL(live.embed.host_example_url);
  url.pathname = url.pathname.replace(/[^/]+$/, slug);
  url.search = query;
  await page.goto(url.toString());
  const frame = await waitFor(
    () => page.frames().find((f) => f.url().includes('/embed/emb_')),
    30_000,
    'the embed frame',
  );
  await frame.locator('.product h1').waitFor();
  return { page, frame };
}

const hostEvents = (page: Page) =>
  page.evaluate('window.embedEvents') as Promise<
    Array<{ type: string; data: Record<string, unknown> }>
  >;

async function waitForEvent(page: Page, type: string, count = 1) {
  return waitFor(
    async () => {
      const list = (await hostEvents(page)).filter((e) => e.type === type);
      return list.length >= count ? list[count - 1] : undefined;
    },
    60_000,
    `host event ${type}`,
  );
}

/**
 * Every transaction the wallet was asked to send carried the gas limit of the rule (estimate +
 * 25 % + the fee accrual's allowance, embed-app/src/gas.ts) over the estimate the embed made just
 * before it, and the mined transaction has that limit: the wallet used it.
 */
async function expectGasRule(wallet: TestWallet) {
  const sent = wallet.sent();
  expect(sent.length).toBeGreaterThan(0);
  for (const call of sent) {
    const tx = (call.params as [{ data: Hex; gas?: Hex }])[0];
    const estimate = wallet.calls
      .slice(0, wallet.calls.indexOf(call))
      .reverse()
      .find(
        (c) => c.method === 'eth_estimateGas' && (c.params as [{ data: Hex }])[0].data === tx.data,
      );
    expect(estimate?.result, `an estimate before ${tx.data.slice(0, 10)}`).toBeDefined();
    expect(tx.gas, `the gas limit of ${tx.data.slice(0, 10)}`).toBeDefined();
    expect(BigInt(tx.gas!)).toBe(gasLimit(BigInt(estimate!.result as Hex)));
    if (call.outcome === 'rejected') continue;
    const mined = (await rpc('eth_getTransactionByHash', [call.outcome])) as { gas: Hex };
    expect(BigInt(mined.gas)).toBe(BigInt(tx.gas!));
  }
}

/** The iframe's height (the host helper sets it) and its content's (the embed's root element). */
async function heights(page: Page, frame: Frame) {
  const iframe = (await page.evaluate(
    "document.querySelector('iframe').getBoundingClientRect().height",
  )) as number;
  const content = (await frame.evaluate(
    "Math.ceil(document.querySelector('.embed').getBoundingClientRect().height)",
  )) as number;
  return { iframe, content };
}

/** Waits until the iframe is exactly as tall as its content and `accept` holds; its height. */
async function fitted(page: Page, frame: Frame, accept: (content: number) => boolean = () => true) {
  return waitFor(
    async () => {
      const h = await heights(page, frame);
      return h.iframe === h.content && accept(h.content) ? h.content : undefined;
    },
    30_000,
    'the iframe sized to its content',
  );
}

async function shot(page: Page, name: string) {
  await page.locator('iframe').screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

async function seriousViolations(frame: Frame): Promise<string[]> {
  if (!(await frame.evaluate("'axe' in window"))) await frame.evaluate(axeSource);
  const violations = (await frame.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa', 'best-practice'] } }).then((r) => r.violations)`,
  )) as Array<{ id: string; impact: string | null; help: string }>;
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}`);
}

/** The wallet's asset balance and engine shares, on chain. */
async function holdings(p: { asset_address: Address; engine_address: Address }, who: Address) {
  const { encodeFunctionData, erc20Abi } = await import('viem');
  const read = async (to: Address) =>
    BigInt(
      (await rpc('eth_call', [
        { to, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [who] }) },
        'latest',
      ])) as Hex,
    );
  return { assets: await read(p.asset_address), shares: await read(p.engine_address) };
}

/** The deposit.confirmed deliveries the receiver got for `who`'s deposits. */
function depositWebhooks(who: Address) {
  return receiver.requests
    .filter((r) => r.headers['x-service-event'] === 'deposit.confirmed')
    .map(
      (r) =>
        JSON.parse(r.body.toString()) as {
          tx_hash: string;
          user_address: string;
          amount: string;
          shares: string;
        },
    )
    .filter((b) => b.user_address.toLowerCase() === who.toLowerCase());
}

/** Mines the blocks time would (the indexer takes logs two deep) and waits for the webhook. */
async function depositWebhook(who: Address, txHash: Hex) {
  await rpc('anvil_mine', ['0x3']);
  return waitFor(
    () => depositWebhooks(who).find((b) => b.tx_hash === txHash),
    90_000,
    `deposit.confirmed for ${txHash}`,
  );
}

/** Opens the active product with `wallet`, connected, on the deposit tab. */
async function connectedEmbed(wallet: TestWallet, viewport = { width: 1100, height: 1500 }) {
  const context = await browser.newContext({ viewport });
  await wallet.install(context, new URL(live.embed.url).origin);
  const { page, frame } = await openHost(context, live.products.active);
  const embed = page.frameLocator('iframe');
  await embed.getByRole('button', { name: /connect/i }).click();
  await embed.getByText('Your position').waitFor();
  return { context, page, frame, embed };
}

describe.skipIf(skip)('the embed in Chromium', () => {
  beforeAll(async () => {
    const assets = builtEmbedAssets();
    const gz = [...assets.files]
      .filter(([k]) => k.startsWith('assets/'))
      .reduce((n, [, f]) => n + f.gzip.length, 0);
    console.log(`embed bundle: ${(gz / 1024).toFixed(1)} KB gzip (budget 80 KB)`);
    receiver = await startHttpsReceiver();
    const config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      LOCAL_CHAIN_PORT: '0',
      // The screenshots show a measured APY and its 7-day figure as a partner would meet them:
      // 120 days put the simulated 0.4 % loss (mid-history, src/chain/local/simulate.ts) well before
      // the last 7 days, and the products back above their high-water mark, so each product's
      // fees show in its net APY. With 9 days the 7-day figure read -14.54 %; with 20 no fee was
      // charged yet and every product showed the same APY. Two days are enough for the checks.
      LOCAL_CHAIN_DAYS: process.env.EMBED_SCREENSHOTS === '1' ? '120' : '2',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
      WEBHOOK_CA_FILE: TLS_CA,
    });
    service = await startService(config, createLogger('warn'));
    const chains = await service.ready;
    rpcUrl = chains.localRpcUrl!;
    chainId = Number(await rpc('eth_chainId'));
    const creds = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    live = creds.partners[0].live;
    apiKey = creds.partners[0].live.api_key;
    const { rows } = await service.db.query<{ partner_id: string }>(
      'SELECT partner_id FROM products WHERE slug = $1',
      [live.products.active],
    );
    partnerId = rows[0]!.partner_id;
    await createWebhookDestinationsRepo(service.db, createSecretBox(masterKeyFor(config))).add({
      partnerId,
      environment: 'live',
      url: `${receiver.url}/hooks`,
      eventTypes: ['deposit.confirmed', 'redeem.claimable'],
    });
    // No interest on the sync vault during the test: the shares a deposit mints can then be
    // compared exactly with the preview read a few blocks earlier (with interest accruing every
    // second, the preview is a lower bound, not an equality).
    const sync = await productRow(live.products.active);
    const { encodeFunctionData } = await import('viem');
    await sendFrom(
      LOCAL_ROLES.deployer,
      sync.underlying_vault_address,
      encodeFunctionData({ abi: yieldVaultAbi, functionName: 'setRatePerSecond', args: [0n] }),
    );
    const deployHash = (await rpc('eth_sendTransaction', [
      { from: LOCAL_ROLES.users[0], data: batchCallAccountBytecode },
    ])) as Hex;
    batchAccount = (
      (await waitFor(
        async () => (await rpc('eth_getTransactionReceipt', [deployHash])) ?? undefined,
        30_000,
        'the batch account',
      )) as { contractAddress: Address }
    ).contractAddress;
    otherOrigin = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<!doctype html><title>not allowed</title><iframe src="${live.embed.url}" width="400" height="400"></iframe>`,
      );
    });
    await new Promise<void>((r) => otherOrigin.listen(0, '127.0.0.1', r));
    browser = await launchChromium();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await receiver?.close();
    await new Promise((r) => (otherOrigin ? otherOrigin.close(r) : r(undefined)));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the demo credentials name the embed and a host page on another loopback origin', () => {
    expect(live.embed.url).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/embed\/emb_[1-9A-HJ-NP-Za-km-z]{22}\//,
    );
    expect(live.embed.url.endsWith(`/${live.products.active}`)).toBe(true);
    expect(live.embed.host_example_url).toMatch(
      /^http:\/\/localhost:\d+\/embed\/host-example\/emb_/,
    );
  });

  it('the product view reads the engine: no fee change scheduled (engines without the schedule views read as none)', async () => {
    const api = live.embed.url.replace('/embed/', '/embed/api/');
    const view = ((await (await fetch(api)).json()) as { data: Record<string, unknown> }).data;
    expect(view.scheduled_fee_change).toBeNull();
    expect(view.gate).toEqual({ deposit: true, withdraw: true, reason: null });
  });

  it('sync product: wrong chain, a refused signature, approve then deposit (shares = preview), withdraw, host events, deposit.confirmed webhook', {
    timeout: 240_000,
  }, async () => {
    const sync = await productRow(live.products.active);
    const wallet = await fundedWallet(sync.asset_address, 1_000n * 10n ** 6n);
    wallet.chainId = 1; // the user's wallet starts on another network
    const context = await browser.newContext({ viewport: { width: 1100, height: 1500 } });
    await wallet.install(context, new URL(live.embed.url).origin);
    const { page } = await openHost(context, live.products.active);
    await waitForEvent(page, 'ready');

    // First render on a warm server: this is the second load of the page in this process.
    const firsts: number[] = [];
    for (let i = 0; i < 3; i++) {
      await page.reload();
      const f = await waitFor(
        () => page.frames().find((x) => x.url().includes('/embed/emb_')),
        30_000,
        'frame',
      );
      await f.locator('.product h1').waitFor();
      firsts.push(
        (await f.evaluate(
          () => performance.getEntriesByName('embed-interactive')[0]?.startTime ?? -1,
        )) as number,
      );
    }
    console.log(
      `embed first render (iframe navigation to first render, warm): ${firsts.map((n) => `${Math.round(n)} ms`).join(', ')}`,
    );
    const frame = page.frames().find((f) => f.url().includes('/embed/emb_'))!;
    const embed = page.frameLocator('iframe');
    expect((await hostEvents(page))[0]).toEqual({
      type: 'ready',
      data: { product_slug: live.products.active },
    });

    // The host helper sizes the iframe to the embed's content and follows it as it changes: a
    // block 400 px tall added inside the frame, then removed.
    const connect = embed.getByRole('button', { name: /connect/i });
    await connect.waitFor();
    // The wallet was announced by EIP-6963: its button shows the icon it announced.
    expect(await connect.locator('img').count()).toBe(1);
    const start = await fitted(page, frame);
    await frame.evaluate(
      "(() => { const d = document.createElement('div'); d.id = 'grow'; d.style.height = '400px'; document.querySelector('.embed').appendChild(d); })()",
    );
    const grown = await fitted(page, frame, (h) => h >= start + 400);
    await frame.evaluate("document.getElementById('grow').remove()");
    await fitted(page, frame, (h) => h <= grown - 400);

    await connect.click();
    await embed.getByRole('button', { name: /switch to/i }).waitFor();
    await shot(page, 'wrong-chain');
    await embed.getByRole('button', { name: /switch to/i }).click();
    await embed.getByText('Your position').waitFor();
    await shot(page, 'connected');
    expect((await waitForEvent(page, 'wallet_connected')).data.address).toBe(wallet.address);
    // The position and the deposit form made the content taller; the iframe followed.
    await fitted(page, frame, (h) => h > start);

    // A refused signature: nothing is broadcast, the user reads why, the host gets the code.
    const startNonce = await rpc('eth_getTransactionCount', [wallet.address, 'latest']);
    wallet.rejectNext = true;
    await embed.getByLabel(/amount to deposit/i).fill('100');
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    await embed.getByText(/declined the approval in your wallet\. No funds moved/i).waitFor();
    await shot(page, 'rejected');
    expect((await waitForEvent(page, 'error')).data.code).toBe('user_rejected');
    expect(wallet.sent().map((c) => c.outcome)).toEqual(['rejected']);
    expect(await rpc('eth_getTransactionCount', [wallet.address, 'latest'])).toBe(startNonce);

    // Deposit: the preview from previewDeposit, then approve and deposit, in that order.
    await embed.getByLabel(/amount to deposit/i).fill('');
    await embed.getByLabel(/amount to deposit/i).fill('250.5');
    const previewText = await waitFor(
      async () =>
        (await frame.locator('[data-testid=deposit-preview]').count())
          ? frame.locator('[data-testid=deposit-preview]').textContent()
          : undefined,
      30_000,
      'the preview',
    );
    const preview = BigInt(previewText!);
    // Shown to 6 places like the position's shares (an engine's shares have 12 or 18).
    expect(await frame.locator('#deposit-help').textContent()).toMatch(
      /^You receive [\d,]+(\.\d{1,6})? shares \(preview from the product contract\)\.$/,
    );
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    const confirmed = await waitForEvent(page, 'deposit_confirmed');
    const sent = wallet.sent().slice(1);
    expect(sent.map((c) => (c.params as [{ data: string }])[0].data.slice(0, 10))).toEqual([
      APPROVE,
      DEPOSIT,
    ]);
    expect(sent.map((c) => (c.params as [{ to: string }])[0].to.toLowerCase())).toEqual([
      sync.asset_address.toLowerCase(),
      sync.engine_address.toLowerCase(),
    ]);
    const depositHash = sent[1]!.outcome as Hex;
    expect(confirmed.data.tx_hash).toBe(depositHash);
    expect((await waitForEvent(page, 'deposit_submitted')).data.tx_hash).toBe(depositHash);
    // What the host heard, in order: no other event, no error but the refused signature.
    expect((await hostEvents(page)).map((e) => [e.type, e.data.tx_hash ?? e.data.code])).toEqual([
      ['ready', undefined],
      ['wallet_connected', undefined],
      ['error', 'user_rejected'],
      ['deposit_submitted', depositHash],
      ['deposit_confirmed', depositHash],
    ]);
    // The submitted hash is the deposit that landed: mined, successful, from the user to the engine.
    const receipt = (await rpc('eth_getTransactionReceipt', [depositHash])) as {
      status: Hex;
      from: string;
      to: string;
      logs: Array<{ address: string; topics: [Hex]; data: Hex }>;
    };
    expect(receipt).toMatchObject({
      status: '0x1',
      from: wallet.address.toLowerCase(),
      to: sync.engine_address.toLowerCase(),
    });
    await expectGasRule(wallet);
    const minted = receipt.logs
      .filter((l) => l.address.toLowerCase() === sync.engine_address.toLowerCase())
      .map((l) => {
        try {
          return decodeEventLog({ abi: erc4626Abi, ...l });
        } catch {
          return undefined;
        }
      })
      .find((e) => e?.eventName === 'Deposit');
    expect(minted).toBeDefined();
    const args = minted!.args as { assets: bigint; shares: bigint };
    expect(args.assets).toBe(parseUnits('250.5', 6));
    expect(args.shares).toBe(preview);
    // The shown shares are rounded to 6 places; the exact count is the title's.
    await embed
      .locator(
        `[data-testid="position-shares"][data-exact="${formatUnits(preview, sync.share_decimals)}"]`,
      )
      .waitFor();
    await shot(page, 'deposit-done');

    // The embed reported the transaction; the partner's receiver gets deposit.confirmed for it,
    // and the report is linked to that event like an inbound deposit.submitted. The indexer takes
    // logs two blocks deep and anvil mines only on a transaction: mine the blocks time would.
    await rpc('anvil_mine', ['0x3']);
    const delivery = await waitFor(
      () =>
        receiver.requests.find(
          (r) =>
            r.headers['x-service-event'] === 'deposit.confirmed' &&
            (JSON.parse(r.body.toString()) as { tx_hash?: string }).tx_hash === depositHash,
        ),
      90_000,
      'deposit.confirmed at the receiver',
    );
    expect(delivery).toBeDefined();
    const linked = await waitFor(
      async () => {
        const { rows } = await service.db.query<{
          event_type: string;
          linked_event_id: string | null;
        }>('SELECT event_type, linked_event_id FROM inbound_events WHERE tx_hash = $1', [
          depositHash,
        ]);
        return rows[0]?.linked_event_id ? rows[0] : undefined;
      },
      30_000,
      'the linked report',
    );
    expect(linked.event_type).toBe('deposit.submitted');

    // Accessibility of the connected state.
    expect(await seriousViolations(frame)).toEqual([]);

    // Withdraw everything (sync: redeem at once).
    await embed.getByRole('tab', { name: 'Withdraw' }).click();
    await embed.getByRole('button', { name: 'Max' }).click();
    await embed.getByRole('button', { name: /^withdraw$/i }).click();
    await waitForEvent(page, 'redeem_confirmed');
    expect((await waitForEvent(page, 'redeem_submitted')).data.tx_hash).toBe(
      wallet.sent().at(-1)!.outcome,
    );
    await embed.getByText('You have nothing to withdraw.').waitFor();
    const { encodeFunctionData } = await import('viem');
    const left = (await rpc('eth_call', [
      {
        to: sync.engine_address,
        data: encodeFunctionData({
          abi: erc4626Abi,
          functionName: 'balanceOf',
          args: [wallet.address],
        }),
      },
      'latest',
    ])) as Hex;
    expect(BigInt(left)).toBe(0n);
    await expectGasRule(wallet);
    await context.close();
  });

  it('a wallet with atomic batching (EIP-5792) deposits with one confirmation: approve + deposit in one wallet_sendCalls', {
    timeout: 180_000,
  }, async () => {
    const sync = await productRow(live.products.active);
    const wallet = await fundedWallet(sync.asset_address, 500n * 10n ** 6n, 'batch');
    // 360 px wide: the smallest layout the embed supports.
    const { context, page, frame, embed } = await connectedEmbed(wallet, {
      width: 360,
      height: 1400,
    });
    const before = await holdings(sync, wallet.address);
    await embed.getByLabel(/amount to deposit/i).fill('120');
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    const confirmed = await waitForEvent(page, 'deposit_confirmed');
    expect(confirmed.data).toMatchObject({ rung: 'batch', approval: 'in_batch', confirmations: 1 });
    // One prompt: the batch, atomic, approve then deposit; followed by wallet_getCallsStatus.
    expect(wallet.prompts().map((c) => c.method)).toEqual(['wallet_sendCalls']);
    const [req] = wallet.prompts()[0]!.params as [
      { atomicRequired: boolean; calls: Array<{ to: string; data: Hex }> },
    ];
    expect(req.atomicRequired).toBe(true);
    expect(req.calls.map((c) => [c.to.toLowerCase(), c.data.slice(0, 10)])).toEqual([
      [sync.asset_address.toLowerCase(), APPROVE],
      [sync.engine_address.toLowerCase(), DEPOSIT],
    ]);
    expect(wallet.calls.some((c) => c.method === 'wallet_getCallsStatus')).toBe(true);
    const submitted = await waitForEvent(page, 'deposit_submitted');
    expect(submitted.data).toMatchObject({ tx_hash: null, rung: 'batch' });
    expect(submitted.data.batch_id).toBe(wallet.prompts()[0]!.outcome);
    // On chain: one transaction from the user (to itself, the delegated account) moved the funds.
    const txHash = confirmed.data.tx_hash as Hex;
    const mined = (await rpc('eth_getTransactionReceipt', [txHash])) as {
      status: Hex;
      from: string;
    };
    expect(mined).toMatchObject({ status: '0x1', from: wallet.address.toLowerCase() });
    const after = await holdings(sync, wallet.address);
    expect(after.assets).toBe(before.assets - parseUnits('120', 6));
    expect(formatUnits(after.shares - before.shares, sync.share_decimals)).toBe(
      confirmed.data.shares,
    );
    await embed.getByTestId('deposit-rung').filter({ hasText: 'you confirm once' }).waitFor();
    await embed.locator('.step.done').filter({ hasText: 'one confirmation' }).waitFor();
    await embed
      .locator(
        `[data-testid="position-shares"][data-exact="${formatUnits(after.shares, sync.share_decimals)}"]`,
      )
      .waitFor();
    expect(await frame.evaluate('document.documentElement.scrollWidth <= 360')).toBe(true);
    expect(await seriousViolations(frame)).toEqual([]);
    await shot(page, 'deposit-one-confirmation');
    const hook = await depositWebhook(wallet.address, txHash);
    expect(hook.amount).toBe('120');
    expect(hook.shares).toBe(confirmed.data.shares);
    await context.close();
  });

  it('a wallet without batching, over the permit asset: one signature and one transaction (the permit router)', {
    timeout: 180_000,
  }, async () => {
    const sync = await productRow(live.products.active);
    const view = (
      (await (await fetch(live.embed.url.replace('/embed/', '/embed/api/'))).json()) as {
        data: { permit_router_address: string | null };
      }
    ).data;
    expect(view.permit_router_address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const wallet = await fundedWallet(sync.asset_address, 500n * 10n ** 6n, 'permit');
    const { context, page, embed } = await connectedEmbed(wallet);
    const before = await holdings(sync, wallet.address);
    await embed.getByLabel(/amount to deposit/i).fill('75.25');
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    const confirmed = await waitForEvent(page, 'deposit_confirmed');
    expect(confirmed.data).toMatchObject({ rung: 'permit', approval: 'permit', confirmations: 2 });
    expect(wallet.prompts().map((c) => c.method)).toEqual([
      'eth_signTypedData_v4',
      'eth_sendTransaction',
    ]);
    const [tx] = wallet.sent()[0]!.params as [{ to: string }];
    expect(tx.to.toLowerCase()).toBe(view.permit_router_address!.toLowerCase());
    expect(confirmed.data.tx_hash).toBe(wallet.sent()[0]!.outcome);
    await expectGasRule(wallet);
    const after = await holdings(sync, wallet.address);
    expect(after.assets).toBe(before.assets - parseUnits('75.25', 6));
    expect(formatUnits(after.shares - before.shares, sync.share_decimals)).toBe(
      confirmed.data.shares,
    );
    // The router keeps nothing.
    expect(await holdings(sync, view.permit_router_address as Address)).toEqual({
      assets: 0n,
      shares: 0n,
    });
    await embed.getByTestId('deposit-rung').filter({ hasText: 'supports permits' }).waitFor();
    await shot(page, 'deposit-permit');
    const hook = await depositWebhook(wallet.address, confirmed.data.tx_hash as Hex);
    expect(hook.amount).toBe('75.25');
    await context.close();
  });

  it('declining the batch, the signature, the approval or the deposit: the user reads what happened, no funds move', {
    timeout: 400_000,
  }, async () => {
    const sync = await productRow(live.products.active);
    const depositCall = (m: string, p: unknown) =>
      m === 'eth_sendTransaction' && (p as [{ data: Hex }])[0].data.startsWith(DEPOSIT);
    const cases = [
      {
        kind: 'batch',
        refuse: (m: string) => m === 'wallet_sendCalls',
        words:
          /declined the deposit \(approve and deposit in one confirmation\) in your wallet\. No funds moved/,
      },
      {
        kind: 'permit',
        refuse: (m: string) => m === 'eth_signTypedData_v4',
        words: /declined the permit signature in your wallet\. No funds moved/,
      },
      {
        kind: 'permit',
        refuse: (m: string) => m === 'eth_sendTransaction',
        words: /declined the deposit transaction in your wallet\. No funds moved/,
      },
      {
        kind: 'plain',
        refuse: (m: string) => m === 'eth_sendTransaction',
        words: /declined the approval in your wallet\. No funds moved/,
      },
      {
        kind: 'plain',
        refuse: depositCall,
        words:
          /declined the deposit transaction in your wallet\. No funds moved\. Your approval transaction went through/,
      },
    ] as const;
    for (const c of cases) {
      const wallet = await fundedWallet(sync.asset_address, 200n * 10n ** 6n, c.kind);
      wallet.refuse = c.refuse;
      const { context, page, embed } = await connectedEmbed(wallet);
      const before = await holdings(sync, wallet.address);
      await embed.getByLabel(/amount to deposit/i).fill('50');
      await embed.getByRole('button', { name: /^deposit$/i }).click();
      await embed.getByRole('alert').filter({ hasText: c.words }).waitFor();
      expect((await waitForEvent(page, 'error')).data.code).toBe('user_rejected');
      expect((await hostEvents(page)).some((e) => e.type.startsWith('deposit_'))).toBe(false);
      await embed.locator('.step.failed').first().waitFor();
      expect(await holdings(sync, wallet.address)).toEqual(before);
      expect(wallet.prompts().filter((x) => x.outcome === 'rejected')).toHaveLength(1);
      if (c.kind === 'batch') await shot(page, 'batch-declined');
      // Not half done: the form is usable again, and a second try (not refused) deposits.
      wallet.refuse = undefined;
      await embed.getByRole('button', { name: /^deposit$/i }).click();
      const confirmed = await waitForEvent(page, 'deposit_confirmed');
      // After a confirmed approval, the retry needs no new one.
      if (c.refuse === depositCall) expect(confirmed.data.approval).toBe('existing_allowance');
      const after = await holdings(sync, wallet.address);
      expect(after.assets).toBe(before.assets - parseUnits('50', 6));
      await depositWebhook(wallet.address, confirmed.data.tx_hash as Hex);
      // The refused attempt left no deposit on chain: the receiver heard of one deposit only.
      expect(depositWebhooks(wallet.address).map((b) => b.tx_hash)).toEqual([
        confirmed.data.tx_hash,
      ]);
      await context.close();
    }
  });

  it('a wallet exposed only as window.ethereum (no EIP-6963 announcement) is found and used', {
    timeout: 180_000,
  }, async () => {
    const sync = await productRow(live.products.active);
    const wallet = await fundedWallet(sync.asset_address, 100n * 10n ** 6n);
    const context = await browser.newContext({ viewport: { width: 1100, height: 1500 } });
    const embedOrigin = new URL(live.embed.url).origin;
    await wallet.install(context, embedOrigin, { announce: false });
    const { page, frame } = await openHost(context, live.products.active);
    const embed = page.frameLocator('iframe');
    const connect = embed.getByRole('button', { name: 'Connect wallet' });
    await connect.waitFor();
    // The fallback offers the provider without an icon (an EIP-6963 wallet brings its own).
    expect(await connect.locator('img').count()).toBe(0);
    expect(await frame.evaluate('window.ethereum.isTestWallet')).toBe(true);
    await connect.click();
    await embed.getByText('Your position').waitFor();
    expect((await waitForEvent(page, 'wallet_connected')).data).toEqual({
      address: wallet.address,
      chain_id: chainId,
    });
    await embed.getByLabel(/amount to deposit/i).fill('5');
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    const confirmed = await waitForEvent(page, 'deposit_confirmed');
    expect(wallet.sent().map((c) => c.outcome)).toEqual([
      expect.stringMatching(/^0x[0-9a-f]{64}$/),
      confirmed.data.tx_hash,
    ]);
    // Every request went to that provider from the embed's own frame.
    expect(new Set(wallet.calls.map((c) => c.origin))).toEqual(new Set([embedOrigin]));
    await expectGasRule(wallet);
    await context.close();
  });

  it('paused: no deposit, with the reason; deprecated: withdraw only', {
    timeout: 120_000,
  }, async () => {
    const wallet = createTestWallet({ rpcUrl, chainId, index: 4 }); // a demo user with positions
    const context = await browser.newContext({ viewport: { width: 1100, height: 1500 } });
    await wallet.install(context, new URL(live.embed.url).origin);
    for (const [key, reason] of [
      ['paused', /Deposits are paused/],
      ['deprecated', /closed to new deposits/],
    ] as const) {
      const { page } = await openHost(context, live.products[key]);
      const embed = page.frameLocator('iframe');
      await embed.getByText(reason).waitFor();
      await embed.getByRole('button', { name: /connect/i }).click();
      await embed.getByRole('tab', { name: 'Withdraw' }).waitFor();
      expect(await embed.getByRole('tab', { name: 'Deposit' }).count()).toBe(0);
      expect(await embed.getByLabel(/amount to deposit/i).count()).toBe(0);
      await shot(page, key);
      await page.close();
    }
    expect(wallet.sent()).toEqual([]);
    await context.close();
  });

  it('a page on an origin that is not allowed cannot frame it; without a wallet it offers a new tab', {
    timeout: 120_000,
  }, async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const address = otherOrigin.address() as { port: number };
    const blocked = new Promise<boolean>((resolve) => {
      page.on('console', (m) => {
        if (/frame-ancestors/.test(m.text())) resolve(true);
      });
      setTimeout(() => resolve(false), 15_000);
    });
    await page.goto(`http://127.0.0.1:${address.port}/`);
    expect(await blocked).toBe(true);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    expect(await frame?.locator('#app').count()).toBe(0);

    // The allowed host page, but no wallet anywhere: the embed offers to open in a new tab.
    const { page: host } = await openHost(context, live.products.active);
    const link = host.frameLocator('iframe').getByRole('link', { name: 'Open in a new tab' });
    await link.waitFor();
    expect(await link.getAttribute('target')).toBe('_blank');
    await shot(host, 'no-wallet');
    await context.close();
  });

  it("bridge mode: the embed uses the host page's wallet through the host helper", {
    timeout: 120_000,
  }, async () => {
    const sync = await productRow(live.products.active);
    const wallet = await fundedWallet(sync.asset_address, 100n * 10n ** 6n);
    const context = await browser.newContext({ viewport: { width: 1100, height: 1500 } });
    const hostOrigin = new URL(live.embed.host_example_url).origin;
    await wallet.install(context, hostOrigin); // in the host page only, not in the frame
    const { page, frame } = await openHost(context, live.products.active, '?bridge=1');
    expect(await frame.evaluate("'ethereum' in window")).toBe(false);
    const embed = page.frameLocator('iframe');
    await embed.getByRole('button', { name: /connect your wallet/i }).click();
    await embed.getByText('Your position').waitFor();
    await embed.getByLabel(/amount to deposit/i).fill('10');
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    await waitForEvent(page, 'deposit_confirmed');
    // Every wallet request was made by the host page (relayed), none by the frame itself.
    expect(new Set(wallet.calls.map((c) => c.origin))).toEqual(new Set([hostOrigin]));
    expect(wallet.sent().map((c) => c.outcome)).toHaveLength(2);
    await expectGasRule(wallet);
    await shot(page, 'bridge');
    await context.close();
  });
  it('async product: request pending with its estimated time; claimable on chain → redeem.claimable once at the HTTPS receiver, the position endpoint pending → claimable → gone; the claim button completes it', {
    timeout: 300_000,
  }, async () => {
    const p = await productRow(live.products.active_async);
    const wallet = await fundedWallet(p.asset_address, 500n * 10n ** 6n);
    const context = await browser.newContext({ viewport: { width: 1100, height: 1500 } });
    await wallet.install(context, new URL(live.embed.url).origin);
    const { page } = await openHost(
      context,
      live.products.active_async,
      '?theme=dark&accent=0f9d76',
    );
    const embed = page.frameLocator('iframe');
    await embed.getByRole('button', { name: /connect/i }).click();
    await embed.getByLabel(/amount to deposit/i).fill('100');
    await embed.getByRole('button', { name: /^deposit$/i }).click();
    await waitForEvent(page, 'deposit_confirmed');
    await embed.getByRole('tab', { name: 'Withdraw' }).click();
    await embed.getByRole('button', { name: 'Max' }).click();
    await embed.getByRole('button', { name: /request withdrawal/i }).click();
    const requested = await waitForEvent(page, 'redeem_requested');
    const requestId = requested.data.request_id as string;
    expect(requestId).toMatch(/^0x[0-9a-f]+$/);
    await embed
      .getByTestId('redeem-request')
      .getByText(/pending, estimated ready/)
      .waitFor();
    await shot(page, 'async-pending');

    // The partner API: once confirmed, the request is listed as pending with its estimated time.
    const position = async () => {
      const res = await fetch(
        `${service.url}/api/partner/products/${live.products.active_async}/position?address=${wallet.address}`,
        { headers: { 'x-api-key': apiKey } },
      );
      expect(res.status).toBe(200);
      return (
        (await res.json()) as {
          data: {
            shares: string;
            pending_redeems: Array<{
              request_id: string;
              shares: string;
              status: string;
              claimable_at: string | null;
            }>;
            redeem_requests: Array<{
              request_id: string;
              shares: string;
              status: string;
              estimated_claimable_at: string | null;
              claimable_since: string | null;
            }>;
          };
        }
      ).data;
    };
    await rpc('anvil_mine', ['0x3']);
    const pending = await waitFor(
      async () => (await position()).redeem_requests[0],
      60_000,
      'the pending request in the position',
    );
    expect(pending).toMatchObject({
      request_id: requestId,
      status: 'pending',
      claimable_since: null,
    });
    expect(pending.estimated_claimable_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // DECISIONS' shape of the same request: one claimable_at (the estimate while pending).
    expect((await position()).pending_redeems).toEqual([
      {
        request_id: requestId,
        shares: pending.shares,
        status: 'pending',
        claimable_at: pending.estimated_claimable_at,
      },
    ]);
    const claimableHooks = () =>
      receiver.requests.filter(
        (r) =>
          r.headers['x-service-event'] === 'redeem.claimable' &&
          (JSON.parse(r.body.toString()) as { request_id: string; slug: string }).request_id ===
            requestId &&
          (JSON.parse(r.body.toString()) as { slug: string }).slug === live.products.active_async,
      );
    expect(claimableHooks()).toHaveLength(0);

    // The settlement delay passes on chain; confirmed blocks follow.
    await rpc('evm_increaseTime', [86_400 + 60]);
    await rpc('evm_mine');
    await rpc('anvil_mine', ['0x3']);
    const hook = await waitFor(
      () => claimableHooks()[0],
      90_000,
      'redeem.claimable at the receiver',
    );
    const body = JSON.parse(hook.body.toString()) as {
      user_address: string;
      shares: string;
      assets: string;
      block_number: number;
      claimable_at: string;
      claim: { to: string; function: string; receiver: string; data: Hex };
    };
    const { encodeFunctionData } = await import('viem');
    const claimData = encodeFunctionData({
      abi: yieldEngineAbi,
      functionName: 'claimRedeem',
      args: [BigInt(requestId), wallet.address],
    });
    expect(body).toMatchObject({
      user_address: wallet.address,
      shares: pending.shares,
      claim: {
        to: getAddress(p.engine_address),
        function: 'claimRedeem(uint256,address)',
        receiver: wallet.address,
        data: claimData,
      },
    });
    expect(Date.parse(body.claimable_at)).toBe(Date.parse(pending.estimated_claimable_at!));
    // The assets due are what the claim pays at that block (the engine's own answer).
    const due = (await rpc('eth_call', [
      { from: wallet.address, to: p.engine_address, data: claimData },
      `0x${body.block_number.toString(16)}`,
    ])) as Hex;
    expect(body.assets).toBe(formatUnits(BigInt(due), 6));
    const claimable = await waitFor(
      async () => {
        const r = (await position()).redeem_requests[0];
        return r?.status === 'claimable' ? r : undefined;
      },
      30_000,
      'the claimable request in the position',
    );
    expect(claimable).toMatchObject({ request_id: requestId, estimated_claimable_at: null });
    expect(claimable.claimable_since).toBe(body.claimable_at);
    expect((await position()).pending_redeems).toEqual([
      {
        request_id: requestId,
        shares: pending.shares,
        status: 'claimable',
        claimable_at: body.claimable_at,
      },
    ]);

    await page.reload();
    const again = page.frameLocator('iframe');
    await again.getByRole('button', { name: /connect/i }).click();
    await again.getByRole('tab', { name: 'Withdraw' }).click();
    await again
      .getByTestId('redeem-request')
      .getByText(/ready to claim since/)
      .waitFor();
    await shot(page, 'async-claimable');
    const before = await holdings(
      { asset_address: p.asset_address, engine_address: p.engine_address },
      wallet.address,
    );
    await again.getByRole('button', { name: 'Claim' }).click();
    const claimed = await waitForEvent(page, 'redeem_confirmed');
    expect(claimed.data.request_id).toBe(requestId);
    await again.getByTestId('redeem-request').waitFor({ state: 'detached' });
    const after = await holdings(
      { asset_address: p.asset_address, engine_address: p.engine_address },
      wallet.address,
    );
    expect(after.assets).toBeGreaterThanOrEqual(before.assets + BigInt(due) - 10n ** 4n);
    await expectGasRule(wallet);
    const frame = page.frames().find((f) => f.url().includes('/embed/emb_'))!;
    expect(await seriousViolations(frame)).toEqual([]);
    // Gone from the position once claimed (read live at the head block).
    await waitFor(
      async () => ((await position()).redeem_requests.length === 0 ? true : undefined),
      30_000,
      'the claimed request gone from the position',
    );
    expect((await position()).pending_redeems).toEqual([]);
    // Exactly once: more blocks and follower rounds send nothing more for this request.
    await rpc('anvil_mine', ['0x5']);
    await new Promise((r) => setTimeout(r, 6_000));
    expect(claimableHooks()).toHaveLength(1);
    const { rows } = await service.db.query<{ n: string }>(
      "SELECT count(*) AS n FROM events WHERE event_type = 'redeem.claimable' AND payload LIKE $1",
      [`%"request_id":"${requestId}"%${wallet.address}%`],
    );
    expect(Number(rows[0]!.n)).toBe(1);
    await context.close();
  });
});

// docs/embed is written only on request; otherwise the screenshots are temporary.
if (process.env.EMBED_SCREENSHOTS !== '1') {
  afterAll(() => rmSync(SHOTS, { recursive: true, force: true }));
}
