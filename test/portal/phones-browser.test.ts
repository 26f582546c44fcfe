/**
 * Every portal page on a phone (375 px) and a desktop (1,280 px), in real Chromium against the real
 * app, as each role (owner, admin, developer, viewer): no horizontal scroll
 * (document.documentElement.scrollWidth <= innerWidth), nothing drawn beyond the viewport's edges
 * (a box clipped by its card hides content as a sideways scroll does), and no axe violation of any
 * impact. The pages are the portal's GET routes, each with data in it: products with months of
 * figures (charts drawn), keys in both environments, a destination with a long URL and a delivery
 * with three attempts, inbound events (a long idempotency key, one linked to its lifecycle event),
 * embed origins, a team of five with a passkey each, the audit log, and the not-found page. Where
 * a role may not open a page it gets the refusal page, which must fit too (and the refusals are
 * checked to be the role's). The signed-out pages (sign-in, a spent link) the same way. The owner's
 * pages also at 360 px, the narrowest width the portal supports, for fit only.
 *
 * PORTAL_SCREENSHOTS=docs/portal writes docs/portal/phone-<page>.png and desktop-<page>.png of the
 * main pages, as the owner sees them.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createInboundEventsRepo } from '../../src/db/inbound-events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import type { Member, MemberRole } from '../../src/db/portal-members.ts';
import { createPortalPasskeysRepo } from '../../src/db/portal-passkeys.ts';
import { createDeliveryQueue } from '../../src/db/webhook-delivery-queue.ts';
import { OPERATOR } from '../../src/operations/actor.ts';
import { changeEmbedOrigins } from '../../src/operations/embed-origins.ts';
import { setInboundSecret } from '../../src/operations/inbound-secrets.ts';
import { addDestination } from '../../src/operations/webhook-destinations.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import type { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy } from '../../src/webhooks/address-policy.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { a11yViolations, axeSource, chromiumMissing, launchChromium } from './browser.ts';
import { seedProducts } from './products-fixture.ts';

const missing = chromiumMissing();
const shots = process.env.PORTAL_SCREENSHOTS;

const ROLES: readonly MemberRole[] = ['owner', 'admin', 'developer', 'viewer'];
const WIDTHS = [
  { name: 'phone', width: 375, height: 812 },
  { name: 'desktop', width: 1280, height: 800 },
] as const;

/** The pages of the list that only owners and admins may open (the others see the refusal). */
const OWNERS_AND_ADMINS = [
  'roll a key',
  'revoke a key',
  'edit a destination',
  'rotate a secret',
  'disable a destination',
  'remove a destination',
  'rotate the inbound secret',
  'remove a member',
  'audit log',
];

interface PortalPage {
  /** The screenshot's name (docs/portal/phone-<shot>.png), for the main pages. */
  shot?: string;
  label: string;
  path: string;
  /** A page with charts: wait for them to be drawn. */
  charts?: boolean;
  /** The status it answers with when not refused (200 unless said). */
  status?: number;
}

/**
 * What a page looks like from outside: the document's width against the viewport's, and the
 * elements drawn beyond the viewport's edges (a box clipped by its card hides content as surely as
 * a sideways scroll does). Evaluated as a string: the test program has no DOM types.
 */
const MEASURE = `(() => {
  const width = document.documentElement.clientWidth;
  const outside = [];
  // Boxes hidden on purpose: the skip link until focused, text for screen readers only (clipped
  // to nothing), uPlot's cursor parked off the plot.
  const hidden = (el) => {
    if (el.closest('.skip-link, [hidden], script, style, template, .u-cursor-x, .u-cursor-y, .u-cursor-pt')) return true;
    for (let a = el; a; a = a.parentElement) {
      const box = a.getBoundingClientRect();
      if (getComputedStyle(a).clipPath !== 'none' && box.width <= 1 && box.height <= 1) return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll('*')) {
    if (hidden(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > width + 0.5 || r.left < -0.5) {
      const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
        (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
      outside.push(name + ' [' + Math.round(r.left) + ', ' + Math.round(r.right) + ']');
    }
  }
  return {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    outside: outside.slice(0, 6),
  };
})()`;

describe.skipIf(missing)('every portal page on a phone and a desktop', { timeout: 180_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let browser: Browser;
  let origin: string; // where the browser finds the portal (its public address's origin)
  let portal: string;
  const box = createSecretBox(randomBytes(32));
  const outbox = mkdtempSync(path.join(tmpdir(), 'pys-phones-outbox-'));
  const members = new Map<MemberRole, Member>();
  /** The pages every role visits, with the paths each page needs (role-specific: passkeys). */
  let pagesFor: (role: MemberRole) => PortalPage[] = () => [];

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
        addresses: createAddressPolicy(),
        embedUrl: () => 'https://yield.example.com/embed',
      },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    origin = `http://localhost:${port}`;
    portal = `${origin}/portal`;
    const partner = await createPartnersRepo(t.db).create('Acme Wallet International');
    const [core] = await seedProducts(t.db, partner.id, [
      {
        slug: 'acme-usdc-core',
        displayName: 'USDC Core',
        environment: 'live',
        status: 'active',
        days: 120,
      },
      {
        slug: 'acme-usdc-plus',
        displayName: 'USDC Plus',
        environment: 'live',
        status: 'paused',
        days: 120,
        startTvl: 420_000,
      },
      {
        slug: 'acme-usdc-next',
        displayName: 'USDC Next',
        environment: 'live',
        status: 'pending_deploy',
        days: 0,
      },
      {
        slug: 'acme-usdc-sandbox',
        displayName: 'USDC Sandbox',
        environment: 'test',
        status: 'active',
        days: 30,
      },
    ]);

    // The team: a member of each role with a passkey each, and one more with a long address.
    const passkeys = createPortalPasskeysRepo(t.db);
    for (const role of ROLES) {
      const member = await inviteMember(t.db, {
        partnerId: partner.id,
        email: `${role === 'developer' ? 'integrations.developer' : role}@acme-wallet.example`,
        role,
      });
      members.set(role, member);
      await passkeys.add({
        id: `passkey-${role}`,
        memberId: member.id,
        publicKey: new Uint8Array(77),
        counter: 0,
        transports: ['internal'],
        name: 'Work laptop (Touch ID)',
      });
    }
    await inviteMember(t.db, {
      partnerId: partner.id,
      email: 'finance.reconciliation.team@acme-wallet.example',
      role: 'viewer',
    });

    // Keys in both environments.
    const keys = createApiKeysRepo(t.db);
    const owner = members.get('owner')!.id;
    const { record: key } = await keys.create(partner.id, 'live', 'Production backend', owner);
    await keys.create(partner.id, 'live', 'Reconciliation job (nightly, EU region)', owner);
    await keys.create(partner.id, 'test', 'Staging backend', owner);

    // A destination with a long URL; a delivery that failed twice and then went through, and one
    // that failed three times: the destination's log and a delivery's attempts.
    const { destination } = await addDestination(t.db, box, createAddressPolicy(), OPERATOR, {
      partnerId: partner.id,
      environment: 'live',
      url: 'https://hooks.acme-wallet.example.com/integrations/yield-service/webhooks/receiver?tenant=acme-production-eu-west-1',
    });
    const events = createEventsRepo(t.db);
    const tx = `0x${'ef'.repeat(32)}` as const;
    const confirmed = (await events.insert({
      partnerId: partner.id,
      environment: 'live',
      productId: core!.id,
      eventType: 'deposit.confirmed',
      dedupeKey: `deposit.confirmed:31337:${tx}:0`,
      payload: {
        product_slug: core!.slug,
        tx_hash: tx,
        user_address: `0x${'34'.repeat(20)}`,
        assets: '1250.5',
        shares: '1198.4417',
      },
      occurredAt: new Date(),
      chain: {
        chainId: 31337,
        blockNumber: 42n,
        blockHash: `0x${'01'.repeat(32)}`,
        txHash: tx,
        logIndex: 0,
      },
    }))!;
    await events.insert({
      partnerId: partner.id,
      environment: 'live',
      productId: core!.id,
      eventType: 'vault_pause',
      dedupeKey: 'vault_pause:phones:1',
      payload: { slug: core!.slug, status: 'paused' },
      occurredAt: new Date(),
    });
    const queue = createDeliveryQueue(t.db);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claimed = await queue.claim(10, 60_000);
      await queue.markSent(claimed);
      await queue.record(
        claimed.map((c) => {
          const ok = attempt === 3 && c.eventId === confirmed.id;
          return {
            id: c.id,
            attempt: c.attempt,
            claim: c.claim,
            ok,
            statusCode: ok ? 200 : 503,
            bodyExcerpt: ok
              ? '{"received":true}'
              : '<html><head><title>503 Service Temporarily Unavailable</title></head><body><center><h1>503 Service Temporarily Unavailable</h1></center><hr><center>nginx/1.25.3</center></body></html>',
            error: null,
            retryInMs: 0,
            durationMs: 120 + attempt * 37,
          };
        }),
      );
    }
    const { rows } = await t.db.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE event_id = $1',
      [confirmed.id],
    );
    const delivery = rows[0]!.id;

    // Inbound: the secret (rotated, the old one still verifying for an hour), an event with a
    // long idempotency key, and a submitted deposit linked to its lifecycle event.
    await setInboundSecret(t.db, box, OPERATOR, { partnerId: partner.id, environment: 'live' });
    await setInboundSecret(t.db, box, OPERATOR, {
      partnerId: partner.id,
      environment: 'live',
      graceMs: 3_600_000,
    });
    const inbound = createInboundEventsRepo(t.db);
    const store = (key: string, eventType: string, data: object, txHash?: string) =>
      inbound.store({
        partnerId: partner.id,
        environment: 'live',
        idempotencyKey: key,
        eventType,
        bodySha256: Buffer.alloc(32, key.length),
        body: JSON.stringify({ occurred_at: '2026-03-01T12:00:00Z', data }),
        occurredAt: new Date('2026-03-01T12:00:00Z'),
        ...(txHash ? { tx: { productId: core!.id, chainId: 31337, txHash } } : {}),
      });
    await store('checkout-session-7f3c2a9e-4b1d-4e8a-9c6f-2d5b8a1e0f47-attempt-1', 'ping', {});
    await store('deposit-7', 'deposit.submitted', { product_slug: core!.slug, tx_hash: tx }, tx);

    // Embed: two allowed origins.
    await changeEmbedOrigins(t.db, OPERATOR, {
      partnerId: partner.id,
      environment: 'live',
      change: 'add',
      origins: ['https://wallet.acme-wallet.example', 'https://checkout.acme-wallet.example:8443'],
    });

    const L = '/portal/live';
    const hook = `${L}/webhooks/${destination.id}`;
    pagesFor = (role) => [
      { shot: 'products', label: 'products', path: `${L}/products` },
      { shot: 'product', label: 'a product', path: `${L}/products/${core!.slug}`, charts: true },
      { label: 'a product not deployed yet', path: `${L}/products/acme-usdc-next` },
      { shot: 'keys', label: 'live keys', path: `${L}/keys` },
      { shot: 'keys-test', label: 'test keys', path: '/portal/test/keys' },
      { label: 'roll a key', path: `${L}/keys/${key.id}/roll` },
      { label: 'revoke a key', path: `${L}/keys/${key.id}/revoke` },
      { shot: 'webhooks', label: 'webhooks', path: `${L}/webhooks` },
      { shot: 'destination', label: 'a destination', path: hook },
      { shot: 'delivery', label: 'a delivery', path: `${hook}/deliveries/${delivery}` },
      { label: 'edit a destination', path: `${hook}/edit` },
      { label: 'rotate a secret', path: `${hook}/rotate` },
      { label: 'disable a destination', path: `${hook}/disable` },
      { label: 'remove a destination', path: `${hook}/remove` },
      { shot: 'inbound', label: 'inbound', path: `${L}/webhooks/inbound` },
      { label: 'rotate the inbound secret', path: `${L}/webhooks/inbound/secret/rotate` },
      { shot: 'event', label: 'a lifecycle event', path: `${L}/webhooks/events/${confirmed.id}` },
      { shot: 'embed', label: 'embed', path: `${L}/embed` },
      { shot: 'team', label: 'team', path: `${L}/team` },
      { label: 'remove a member', path: `${L}/team/${members.get('viewer')!.id}/remove` },
      { shot: 'audit', label: 'audit log', path: `${L}/audit` },
      { shot: 'account', label: 'account', path: `${L}/account` },
      { label: 'remove a passkey', path: `${L}/account/passkeys/passkey-${role}/remove` },
      { label: 'a page that does not exist', path: `${L}/no-such-page`, status: 404 },
    ];

    browser = await launchChromium();
    if (shots) mkdirSync(shots, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await t?.drop();
    rmSync(outbox, { recursive: true, force: true });
  });

  /**
   * Opens `url` and returns, in words, what does not fit on it and what axe finds (all impacts);
   * with `axe: false`, only what does not fit.
   */
  async function problems(
    page: Page,
    url: string,
    o: { charts?: boolean; axe?: boolean; status?: readonly number[] } = {},
  ): Promise<{ status: number; found: string[] }> {
    const res = await page.goto(url);
    const found: string[] = [];
    const status = res?.status() ?? 0;
    // A refusal is a page too (403); anything else is a broken link in this list.
    if (!(o.status ?? [200, 403]).includes(status)) return { status, found: [`HTTP ${status}`] };
    if (o.charts && status === 200) {
      // Polled through the DevTools protocol, which the page's CSP does not govern.
      const deadline = Date.now() + 20_000;
      while (!(await page.evaluate('window.portalCharts?.plots.length === 3'))) {
        if (Date.now() > deadline) return { status, found: ['the charts were not drawn'] };
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    const m = (await page.evaluate(MEASURE)) as {
      scrollWidth: number;
      innerWidth: number;
      outside: string[];
    };
    if (m.scrollWidth > m.innerWidth) {
      found.push(`scrolls sideways: ${m.scrollWidth} px wide in ${m.innerWidth} px`);
    }
    if (m.outside.length) found.push(`drawn outside the viewport: ${m.outside.join('; ')}`);
    if (o.axe !== false) found.push(...(await a11yViolations(page)));
    return { status, found };
  }

  async function signedInPage(role: MemberRole): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // axe in every page from the start, sent to the browser once rather than with each page.
    await context.addInitScript({ content: axeSource });
    const page = await context.newPage();
    await page.goto(await issueSignInUrl(t.db, portal, members.get(role)!.id));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    return page;
  }

  // One role after another: side by side they took both cores for a minute, and the suites that
  // ran beside them in CI (the fault suite's convergence waits) starved.
  describe('as each role', () => {
    for (const role of ROLES) {
      it(`fits every page at 375 and 1,280 px with no axe violation, as ${role === 'admin' ? 'an' : 'a'} ${role}`, async ({
        expect,
      }) => {
        const page = await signedInPage(role);
        const pages = pagesFor(role);
        const failures: string[] = [];
        const statuses = new Map<string, number>();
        for (const size of WIDTHS) {
          await page.setViewportSize({ width: size.width, height: size.height });
          for (const p of pages) {
            const { status, found } = await problems(page, `${origin}${p.path}`, {
              charts: p.charts,
              status: [p.status ?? 200, 403],
            });
            for (const f of found) failures.push(`${size.width} px, ${p.label} (${p.path}): ${f}`);
            statuses.set(p.label, status);
            if (shots && role === 'owner' && p.shot) {
              await page.screenshot({
                path: path.join(shots, `${size.name}-${p.shot}.png`),
                fullPage: true,
              });
            }
          }
        }
        // The narrowest width the portal supports: nothing sideways there either.
        if (role === 'owner') {
          await page.setViewportSize({ width: 360, height: 740 });
          for (const p of pages) {
            const { found } = await problems(page, `${origin}${p.path}`, {
              charts: p.charts,
              axe: false,
              status: [p.status ?? 200, 403],
            });
            for (const f of found) failures.push(`360 px, ${p.label} (${p.path}): ${f}`);
          }
        }
        await page.context().close();
        expect(failures).toEqual([]);
        // The refusal page was seen where the role has one: changing live keys, live webhooks and
        // the team, and the audit log, are for owners and admins.
        const refused = [...statuses].filter(([, s]) => s === 403).map(([label]) => label);
        expect(refused).toEqual(role === 'owner' || role === 'admin' ? [] : OWNERS_AND_ADMINS);
      }, 180_000);
    }
  });

  it('fits the signed-out pages at 375 and 1,280 px with no axe violation', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const failures: string[] = [];
    for (const size of WIDTHS) {
      await page.setViewportSize({ width: size.width, height: size.height });
      for (const [label, url, status] of [
        ['sign-in', `${portal}/sign-in`, 200],
        ['a spent sign-in link', `${portal}/sign-in/link?token=${'x'.repeat(43)}`, 410],
      ] as const) {
        const { found } = await problems(page, url, { status: [status] });
        for (const f of found) failures.push(`${size.width} px, ${label}: ${f}`);
      }
    }
    await context.close();
    expect(failures).toEqual([]);
  });
});
