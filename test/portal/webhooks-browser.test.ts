/**
 * Webhook pages in real Chromium against the real dispatcher and a real local HTTPS receiver
 * (loopback allow-listed): add a destination (an http:// URL refused in words first), the secret
 * shown once; send a test event and see it delivered; make the receiver fail and see the failed
 * attempts in the log and the delivery's detail; fix it and replay the failures; rotate the secret
 * and verify a delivery with the OLD secret during the grace period (standardwebhooks library);
 * create and rotate the inbound secret and send a signed inbound event with it, its duplicate and a
 * conflicting reuse of its key, and a submitted deposit linked to its lifecycle event (that event's
 * page too). Axe on each page.
 *
 * PORTAL_SCREENSHOTS=docs/portal writes the screenshots committed there.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import type { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import { signPayload } from '../../src/webhooks/signature.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { type HttpsReceiver, startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { chromiumMissing, launchChromium, seriousA11yViolations } from './browser.ts';
import { seedProducts } from './products-fixture.ts';

const missing = chromiumMissing();
const shots = process.env.PORTAL_SCREENSHOTS;

describe.skipIf(missing)('webhook pages in Chromium', { timeout: 120_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let browser: Browser;
  let page: Page;
  let partner: Partner;
  let receiver: HttpsReceiver;
  let origin: string;
  let portal: string;
  let apiKey: string;
  let failing = false;
  const box = createSecretBox(randomBytes(32));
  /** The sender's policy, and the forms' (as main.ts shares one): loopback allowed, for the receiver. */
  const addresses = createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128'));
  const stops: Array<() => Promise<void>> = [];
  const outbox = mkdtempSync(path.join(tmpdir(), 'pys-wh-outbox-'));

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    let port = 0;
    app = await buildTestApp({
      db: t.db,
      secretBox: box,
      portal: {
        mailer: createOutboxMailer(outbox, 'Portal <portal@test>'),
        publicUrl: () => `http://localhost:${port}/portal`,
        idleMs: 60 * 60_000,
        addresses,
      },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    origin = `http://127.0.0.1:${port}`;
    portal = `http://localhost:${port}/portal`;
    partner = await createPartnersRepo(t.db).create('Acme Wallet');
    apiKey = (await createApiKeysRepo(t.db).create(partner.id, 'live', 'backend')).key;
    receiver = await startHttpsReceiver({
      handler: () => (failing ? { status: 503, body: 'maintenance' } : { status: 200, body: 'ok' }),
    });
    const sender = createSender({
      policy: addresses,
      extraCa: testCaPem(),
    });
    const job = createDispatcher({
      db: t.db,
      logger: captureLogger().logger,
      sender,
      secretBox: box,
      retryDelaysMs: [30, 30],
      pollMs: 20,
    }).job();
    job.start();
    stops.push(
      () => job.stop(),
      () => sender.close(),
      () => receiver.close(),
    );
    const member = await inviteMember(t.db, {
      partnerId: partner.id,
      email: 'ana@acme.example',
      role: 'owner',
    });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: portal.replace(/\/portal$/, ''),
    });
    page = await context.newPage();
    await page.goto(await issueSignInUrl(t.db, portal, member.id));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    if (shots) mkdirSync(shots, { recursive: true });
  });

  afterAll(async () => {
    for (const s of stops) await s().catch(() => {});
    await browser?.close();
    await app?.close();
    await t?.drop();
    rmSync(outbox, { recursive: true, force: true });
  });

  async function check(name: string) {
    expect(await seriousA11yViolations(page), `${name}: accessibility`).toEqual([]);
    if (shots) await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  }

  let n = 0;
  const emit = () =>
    createEventsRepo(t.db).insert({
      partnerId: partner.id,
      environment: 'live',
      productId: null,
      eventType: 'vault_pause',
      dedupeKey: `vault_pause:portal:${n}`,
      payload: { slug: `core-${n++}`, status: 'paused' },
      occurredAt: new Date(),
    });

  it('adds a destination, sends a test event, shows failures, replays them and rotates the secret', async () => {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Webhooks' })
      .click();
    await page.getByText('No live destinations yet').waitFor();
    await check('webhooks-empty');

    // HTTPS only, said in words.
    await page.getByLabel('Endpoint URL (HTTPS)').fill('http://example.com/hook');
    await page.getByRole('button', { name: 'Add destination' }).click();
    await page.getByText(/destinations must be https:\/\/ URLs \(got http\)/).waitFor();

    // A private address is refused at once, in words, the form kept as typed (the sender allows
    // loopback here, for the receiver, and the form judges by the same policy: 10/8 is refused).
    const url = page.getByLabel('Endpoint URL (HTTPS)');
    await url.fill('https://10.0.0.5/hook');
    await page.getByLabel('vault_pause').check();
    await page.getByRole('button', { name: 'Add destination' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain(
        'That URL does not work: 10.0.0.5 is a private address; webhooks are sent only to public addresses: use a public host name or address.',
      );
    expect(await url.inputValue()).toBe('https://10.0.0.5/hook');
    expect(await url.getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('vault_pause').isChecked()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByLabel('vault_pause').uncheck();

    await page.getByLabel('Endpoint URL (HTTPS)').fill(`${receiver.url}/hook`);
    await page.getByRole('button', { name: 'Add destination' }).click();
    const shown = page.getByLabel('Signing secret', { exact: true });
    await shown.waitFor();
    const secret = (await shown.textContent())!.trim();
    await page.getByRole('button', { name: 'Copy' }).click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await check('webhooks-added');

    // A test event, delivered: the page refreshes itself until it is.
    await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
    await page.getByRole('heading', { name: 'Webhook destination' }).waitFor();
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.getByRole('cell', { name: 'Delivered' }).waitFor({ timeout: 20_000 });
    const ping = receiver.requests.find((r) => r.headers['x-service-event'] === 'ping')!;
    expect(
      new Webhook(secret).verify(ping.body.toString(), ping.headers as Record<string, string>),
    ).toMatchObject({ destination_id: expect.stringMatching(/^whk_/) });

    // The receiver fails: three attempts, then failed, in the log and the delivery's detail.
    failing = true;
    await emit();
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.getByRole('cell', { name: 'Failed' }).count();
        },
        { timeout: 20_000 },
      )
      .toBe(1);
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=failed/);
    expect(await page.getByRole('cell', { name: 'Delivered' }).count()).toBe(0);
    await check('webhook-destination');
    await page.getByRole('link', { name: /Details of delivery/ }).click();
    await page.getByRole('heading', { name: 'Delivery', level: 1 }).waitFor();
    expect(await page.getByRole('cell', { name: 'maintenance' }).count()).toBe(3);
    await page.getByText('x-service-event: vault_pause').waitFor();
    await check('webhook-delivery');

    // Fixed: replay everything failed since an hour ago; it is delivered.
    failing = false;
    await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
    await page
      .getByLabel('Replay every failed delivery since (UTC)')
      .fill(new Date(Date.now() - 3_600_000).toISOString().slice(0, 16));
    await page.getByRole('button', { name: 'Replay failed' }).click();
    await page.getByText(/\d+ deliver(y|ies) queued/).waitFor();
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.getByRole('cell', { name: 'Delivered' }).count();
        },
        { timeout: 20_000 },
      )
      .toBe(2);

    // Rotate with a 1-hour grace: a new delivery verifies with the OLD secret too.
    await page.getByRole('link', { name: 'Rotate the secret' }).click();
    await page.getByLabel('1 hour').check();
    await check('webhook-rotate');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = (await page
      .getByLabel('Signing secret', { exact: true })
      .textContent())!.trim();
    expect(rotated).not.toBe(secret);
    await page.getByText(/The old secret \(.*\) keeps signing until/).waitFor();
    const before = receiver.requests.length;
    await emit();
    await expect.poll(() => receiver.requests.length, { timeout: 20_000 }).toBe(before + 1);
    const after = receiver.requests[before]!;
    const headers = after.headers as Record<string, string>;
    expect(new Webhook(secret).verify(after.body.toString(), headers)).toBeTruthy();
    expect(new Webhook(rotated).verify(after.body.toString(), headers)).toBeTruthy();
  });

  it('creates and rotates the inbound secret, then accepts an event signed with it', async () => {
    await page.goto(`${portal}/live/webhooks/inbound`);
    await page.getByText('No live inbound secret yet').waitFor();
    await page.getByText('No inbound events yet').waitFor();
    await page.getByRole('button', { name: 'Create the inbound secret' }).click();
    const first = (await page.getByLabel('Signing secret', { exact: true }).textContent())!.trim();
    // Rotating asks how long the old secret keeps verifying: none, here.
    await page.getByRole('link', { name: 'Back to inbound webhooks' }).click();
    await page.getByRole('link', { name: 'Rotate the inbound secret' }).click();
    await page.getByRole('heading', { name: 'Rotate the inbound secret', level: 1 }).waitFor();
    await page.getByLabel(/^None: requests signed with the old secret are refused/).check();
    await page.getByRole('button', { name: 'Rotate the inbound secret' }).click();
    // The rotated page replaces the confirmation (an htmx swap): wait for the new secret.
    const shown = () => page.getByLabel('Signing secret', { exact: true }).textContent();
    await expect.poll(async () => (await shown())?.trim(), { timeout: 30_000 }).not.toBe(first);
    const secret = (await shown())!.trim();
    const send = (s: string, key: string, event = 'ping', data: object = { from: 'portal' }) => {
      const raw = JSON.stringify({ occurred_at: '2026-03-01T12:00:00Z', data });
      return fetch(`${origin}/api/partner/webhooks/inbound`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': apiKey,
          'x-service-event': event,
          'idempotency-key': key,
          'x-service-signature': signPayload(s, raw),
        },
        body: raw,
      });
    };
    expect((await send(first, 'portal-old')).status).toBe(401);
    expect((await send(secret, 'portal-1')).status).toBe(200);
    // A retry of the same request (absorbed), and the key reused for another body (refused).
    expect(
      ((await (await send(secret, 'portal-1')).json()) as { duplicate: boolean }).duplicate,
    ).toBe(true);
    expect((await send(secret, 'portal-1', 'ping', { from: 'elsewhere' })).status).toBe(409);
    // A submitted deposit whose transaction the indexer has already seen links to its event.
    const [product] = await seedProducts(t.db, partner.id, [
      {
        slug: 'inbound-usdc',
        displayName: 'USDC Core',
        environment: 'live',
        status: 'active',
        days: 0,
      },
    ]);
    const tx = `0x${'ef'.repeat(32)}` as const;
    const confirmed = (await createEventsRepo(t.db).insert({
      partnerId: partner.id,
      environment: 'live',
      productId: product!.id,
      eventType: 'deposit.confirmed',
      dedupeKey: `deposit.confirmed:31337:${tx}:0`,
      payload: { product_slug: 'inbound-usdc', tx_hash: tx, assets: '1250.5' },
      occurredAt: new Date('2026-03-01T12:00:12Z'),
      chain: {
        chainId: 31337,
        blockNumber: 42n,
        blockHash: `0x${'01'.repeat(32)}`,
        txHash: tx,
        logIndex: 0,
      },
    }))!;
    const deposit = {
      product_slug: 'inbound-usdc',
      chain_id: 31337,
      tx_hash: tx,
      user_address: `0x${'34'.repeat(20)}`,
      amount: '1250.5',
    };
    expect((await send(secret, 'deposit-7', 'deposit.submitted', deposit)).status).toBe(200);
    await page.goto(`${portal}/live/webhooks/inbound`);
    await page.getByRole('cell', { name: 'portal-1' }).waitFor();
    expect(await page.getByRole('cell', { name: 'portal-old' }).count()).toBe(0);
    const repeated = page.getByRole('row', { name: /portal-1/ });
    await repeated.getByText('1 duplicate absorbed').waitFor();
    await repeated.getByText('1 conflict refused (409)').waitFor();
    const depositRow = page.getByRole('row', { name: /deposit-7/ });
    await depositRow.getByRole('link', { name: confirmed.id }).waitFor();
    await check('webhooks-inbound');
    await depositRow.getByRole('link', { name: confirmed.id }).click();
    await page.getByRole('heading', { name: 'Lifecycle event', level: 1 }).waitFor();
    await page.getByText('deposit.submitted with idempotency key').waitFor();
    await page.getByRole('link', { name: 'USDC Core' }).waitFor();
    await check('webhooks-event');
  });

  it('edits a destination, disables it by hand and re-enables it with a replay', async () => {
    await page.goto(`${portal}/live/webhooks`);
    await page.getByRole('link', { name: `${receiver.url}/hook` }).click();
    await page.getByRole('link', { name: 'Edit URL and events' }).click();
    await page.getByRole('heading', { name: 'Edit a destination', level: 1 }).waitFor();
    expect(await page.getByLabel('Endpoint URL (HTTPS)').inputValue()).toBe(`${receiver.url}/hook`);

    await page.getByLabel('Endpoint URL (HTTPS)').fill(`${receiver.url}/edited`);
    await page.getByLabel('vault_pause').check();
    await check('webhook-edit');

    // HTTPS only, said in words; what was entered is kept to correct it.
    await page.getByLabel('Endpoint URL (HTTPS)').fill('http://example.com/edited');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/webhook destinations must be https:\/\/ URLs \(got http\)/).waitFor();
    expect(await page.getByLabel('Endpoint URL (HTTPS)').inputValue()).toBe(
      'http://example.com/edited',
    );
    expect(await page.getByLabel('vault_pause').isChecked()).toBe(true);
    await page.getByLabel('Endpoint URL (HTTPS)').fill(`${receiver.url}/edited`);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved. The changes apply to what is sent from now on.').waitFor();
    await page.getByText(`${receiver.url}/edited`).first().waitFor();
    const edited = await emit();
    await expect
      .poll(
        () => receiver.requests.find((r) => r.headers['x-service-event-id'] === edited!.id)?.url,
        {
          timeout: 20_000,
        },
      )
      .toBe('/edited');

    // Disabled by hand, with a note: what happens meanwhile is kept, not sent.
    await page.getByRole('link', { name: 'Disable', exact: true }).click();
    await page.getByRole('heading', { name: 'Disable a destination', level: 1 }).waitFor();
    await page.getByLabel(/Note for your team/).fill('receiver moving to a new host');
    await check('webhook-disable');
    await page.getByRole('button', { name: 'Disable destination' }).click();
    await page.getByRole('heading', { name: 'Disabled by your team' }).waitFor();
    await page
      .getByText(/Disabled by ana@acme\.example on .*\(“receiver moving to a new host”\)/)
      .waitFor();
    await check('webhook-disabled');
    const before = receiver.requests.length;
    const meanwhile = await emit();
    await page.reload();
    await page
      .getByRole('row', { name: /vault_pause.*Failed.*destination disabled/ })
      .first()
      .waitFor();
    expect(receiver.requests.length).toBe(before);

    // Re-enabled: what failed meanwhile is replayed to the edited URL.
    await page.getByRole('button', { name: 'Re-enable and replay what failed' }).click();
    await page
      .getByText('Re-enabled. What failed while it was disabled is being sent again.')
      .waitFor();
    await expect
      .poll(
        () => receiver.requests.find((r) => r.headers['x-service-event-id'] === meanwhile!.id)?.url,
        { timeout: 20_000 },
      )
      .toBe('/edited');
    await page.getByRole('link', { name: 'Disable', exact: true }).waitFor();
  });

  it('pages a long delivery log by 50, by keyboard, keeping the filter', async () => {
    for (let i = 0; i < 55; i++) await emit();
    await page.goto(`${portal}/live/webhooks`);
    await page.getByRole('link', { name: `${receiver.url}/edited` }).click();
    await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
    const rows = page.getByRole('table', { name: 'Deliveries, newest first' }).getByRole('row');
    expect(await rows.count()).toBe(51); // the header and 50 deliveries
    const pages = page.getByRole('navigation', { name: 'Delivery log pages' });
    expect(await pages.getByRole('link', { name: 'Newest deliveries' }).count()).toBe(0);
    await check('webhook-log-pages');
    await pages.getByRole('link', { name: 'Older deliveries' }).focus();
    await page.keyboard.press('Enter');
    await pages.getByRole('link', { name: 'Newest deliveries' }).waitFor();
    // htmx swaps the page in and then pushes its URL.
    await page.waitForURL(/[?&]before=dlv_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect(await rows.count()).toBeGreaterThan(1);

    // A filter carries over to the next page.
    await page.getByLabel('Event type').selectOption('vault_pause');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/[?&]type=vault_pause(&|$)/);
    await pages.getByRole('link', { name: 'Older deliveries' }).click();
    await page.waitForURL(/[?&]before=dlv_/);
    expect(new URL(page.url()).searchParams.get('type')).toBe('vault_pause');
    expect(await page.getByLabel('Event type').inputValue()).toBe('vault_pause');
  });
});
