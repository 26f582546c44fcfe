/**
 * The portal in real Chromium (playwright-core), against the real app listening on loopback: sign in
 * by link, create a key and call the partner API with it, roll it and see both keys work, revoke it,
 * a viewer cannot create keys, register a passkey with Chromium's virtual authenticator (CDP
 * WebAuthn domain) and sign in with it, sign out. Every page passes axe-core with no serious or
 * critical violation. One browser for the file.
 *
 * PORTAL_SCREENSHOTS=docs/portal writes the screenshots committed there.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import { MEMBER_ROLES, type MemberRole } from '../../src/db/portal-members.ts';
import { createPortalPasskeysRepo } from '../../src/db/portal-passkeys.ts';
import { hashSessionId } from '../../src/db/portal-sessions.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { ROLE_SUMMARY } from '../../src/portal/roles.ts';
import { inviteMember, issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import type { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy } from '../../src/webhooks/address-policy.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { chromiumMissing, launchChromium, seriousA11yViolations } from './browser.ts';

const missing = chromiumMissing();
const shots = process.env.PORTAL_SCREENSHOTS;

describe.skipIf(missing)('portal in Chromium', { timeout: 120_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let browser: Browser;
  let partner: Partner;
  let origin: string; // the API, as a partner's backend calls it
  let portal: string; // the portal's public address
  const outbox = mkdtempSync(path.join(tmpdir(), 'pys-browser-outbox-'));
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    let port = 0;
    app = await buildTestApp({
      db: t.db,
      readCache: { pollMs: 100 },
      portal: {
        mailer: createOutboxMailer(outbox, 'Portal <portal@test>'),
        publicUrl: () => `http://localhost:${port}/portal`,
        idleMs: 60 * 60_000,
        addresses: createAddressPolicy(),
      },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    origin = `http://127.0.0.1:${port}`;
    portal = `http://localhost:${port}/portal`;
    partner = await createPartnersRepo(t.db).create('Acme Wallet');
    browser = await launchChromium();
    if (shots) mkdirSync(shots, { recursive: true });
  });

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await app?.close();
    await t?.drop();
    rmSync(outbox, { recursive: true, force: true });
  });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1200, height: 760 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: portal.replace(/\/portal$/, ''),
    });
    contexts.push(context);
    return context.newPage();
  }

  async function signIn(email: string, role: MemberRole): Promise<Page> {
    const member = await inviteMember(t.db, { partnerId: partner.id, email, role });
    const page = await newPage();
    await page.goto(await issueSignInUrl(t.db, portal, member.id));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    return page;
  }

  async function check(page: Page, name: string) {
    expect(await seriousA11yViolations(page), `${name}: accessibility`).toEqual([]);
    if (shots) await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  }

  async function callApi(key: string) {
    const res = await fetch(`${origin}/api/partner/products`, { headers: { 'x-api-key': key } });
    return { status: res.status, code: ((await res.json()) as { code?: string }).code };
  }

  it('signs in by link, creates, rolls and revokes keys that the partner API honours', async () => {
    const member = await inviteMember(t.db, {
      partnerId: partner.id,
      email: 'ana@acme.example',
      role: 'owner',
    });
    const page = await newPage();
    await page.goto(`${portal}/sign-in`);
    await check(page, 'sign-in');
    await page.getByLabel('Work email').fill('ana@acme.example');
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByRole('heading', { name: 'Check your email' }).waitFor();
    await check(page, 'check-email');

    await page.goto(await issueSignInUrl(t.db, portal, member.id));
    await check(page, 'sign-in-link');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByText('No live keys yet').waitFor();
    await check(page, 'keys-empty');

    // Create: the full key once, with a copy button.
    await page.getByLabel('Key name').fill('Production backend');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByLabel('New API key');
    await shown.waitFor();
    const key = (await shown.textContent())!.trim();
    expect(key).toMatch(/^svc_live_[\w-]{43}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
    await check(page, 'keys-created');
    expect(await callApi(key)).toEqual({ status: 200, code: undefined });

    // Roll with a one-hour overlap: both keys work.
    await page.getByRole('link', { name: 'Roll Production backend' }).click();
    await page.getByRole('heading', { name: 'Roll a key' }).waitFor();
    await page.getByLabel('In 1 hour').check();
    await check(page, 'key-roll');
    await page.getByRole('button', { name: 'Roll key' }).click();
    await page.getByRole('heading', { name: /The new key replacing/ }).waitFor();
    const rolled = (await page.getByLabel('New API key').textContent())!.trim();
    expect(rolled).not.toBe(key);
    await page.getByText('Expiring').waitFor();
    expect((await callApi(key)).status).toBe(200);
    expect((await callApi(rolled)).status).toBe(200);

    // Revoke the old one at once (after the confirmation), then it answers revoked_api_key.
    await page.goto(`${portal}/live/keys`);
    const revokeLinks = page.getByRole('link', { name: 'Revoke Production backend' });
    expect(await revokeLinks.count()).toBe(2);
    await revokeLinks.first().click(); // the oldest row: the rolled key
    await page.getByRole('heading', { name: 'Revoke a key' }).waitFor();
    await check(page, 'key-revoke');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText(/is revoked\./).waitFor();
    await expect
      .poll(() => callApi(key), { timeout: 5000 })
      .toEqual({ status: 401, code: 'revoked_api_key' });
    expect((await callApi(rolled)).status).toBe(200);
    await check(page, 'keys');

    // The live/test switch is always there; test keys are another list.
    await page
      .getByRole('navigation', { name: 'Environment' })
      .getByRole('link', { name: 'Test' })
      .click();
    await page.getByText('No test keys yet').waitFor();
    await check(page, 'keys-test');

    // Team and audit log.
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Team' })
      .click();
    await page.getByRole('heading', { name: 'Invite a member' }).waitFor();
    await page.getByLabel('Email').fill('dev@acme.example');
    // Each role a radio whose accessible description is its summary (roles.ts), as Chromium's
    // accessibility tree gives it to a screen reader.
    const cdp = await page.context().newCDPSession(page);
    const { root } = await cdp.send('DOM.getDocument');
    for (const role of MEMBER_ROLES) {
      const { nodeId } = await cdp.send('DOM.querySelector', {
        nodeId: root.nodeId,
        selector: `#invite-role-${role}`,
      });
      const { nodes } = await cdp.send('Accessibility.getPartialAXTree', {
        nodeId,
        fetchRelatives: false,
      });
      expect(
        {
          role: nodes[0]?.role?.value,
          name: nodes[0]?.name?.value,
          description: nodes[0]?.description?.value,
        },
        role,
      ).toEqual({ role: 'radio', name: role, description: ROLE_SUMMARY[role] });
    }
    await cdp.detach();
    await page.getByRole('radio', { name: 'developer' }).check();
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('Invitation sent to dev@acme.example.').waitFor();
    await check(page, 'team');
    // Not yet signed in: an invitation, which may be resent or cancelled (after a confirmation).
    await page
      .getByRole('cell', { name: /Invited/ })
      .first()
      .waitFor();
    await page.getByRole('link', { name: 'Cancel the invitation of dev@acme.example' }).click();
    await page.getByRole('heading', { name: 'Cancel an invitation' }).waitFor();
    await check(page, 'team-remove');
    // Beside "Cancel invitation", the way back says what it does: it keeps the invitation.
    expect(await page.getByRole('link', { name: 'Cancel', exact: true }).count()).toBe(0);
    await page.getByRole('link', { name: 'Keep invitation', exact: true }).click();
    await page.getByRole('link', { name: 'Cancel the invitation of dev@acme.example' }).waitFor();
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Audit log' })
      .click();
    await page.getByRole('cell', { name: 'Rolled a key' }).waitFor();
    await check(page, 'audit');

    // Sign out: back to sign-in, and the pages need signing in again.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.goto(`${portal}/live/keys`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    // A spent link says so in words.
    const link = await issueSignInUrl(t.db, portal, member.id);
    await page.goto(link);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    const again = await newPage();
    await again.goto(link);
    await again.getByRole('heading', { name: 'This link no longer works' }).waitFor();
    await check(again, 'link-used');
  });

  it('shows a viewer the keys but no way to create one, and refuses the request', async () => {
    const page = await signIn('viewer@acme.example', 'viewer');
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    await page.getByText(/Your role \(viewer\) can see live keys/).waitFor();
    // Forcing the request from the page (its own session and CSRF token) is refused.
    const status = await page.evaluate(`(async () => {
      const token = document.querySelector('input[name="_csrf"]').value;
      const res = await fetch('${new URL(portal).pathname}/live/keys', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: token, name: 'sneaky' }),
      });
      return res.status;
    })()`);
    expect(status).toBe(403);
    await check(page, 'keys-viewer');
    // The check itself can fail: a control without a label is reported.
    await page.evaluate("document.querySelector('main').append(document.createElement('input'))");
    expect((await seriousA11yViolations(page)).join('\n')).toMatch(/^label \(critical\)/m);
  });

  it('registers a passkey with a virtual authenticator and signs in with it', async () => {
    const page = await signIn('pia@acme.example', 'developer');
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Your account' })
      .click();
    await page.getByText('No passkeys yet').waitFor();
    await check(page, 'account');
    await page.getByLabel('Name of the new passkey').fill('Work laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added. Next time, sign in with it.').waitFor();
    await page.getByRole('cell', { name: 'Work laptop', exact: true }).waitFor();
    await check(page, 'account-passkey');

    // A second passkey from the same authenticator: the browser refuses it (the member's passkey is
    // in excludeCredentials) and the page says so in words, not WebAuthn's.
    await page.getByLabel('Name of the new passkey').fill('Work laptop again');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'This device already holds a passkey for your account' })
      .waitFor();
    expect(await page.locator('#passkey-status').textContent()).toBe(
      'This device already holds a passkey for your account, so it cannot add another; use another device or remove the old passkey first.',
    );
    expect(await page.getByRole('button', { name: 'Add a passkey' }).isEnabled()).toBe(true);

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    expect(await page.getByText('pia@acme.example · developer').count()).toBe(1);
    const { rows } = await t.db.query<{ action: string; target: string }>(
      `SELECT action, target FROM portal_audit_log WHERE actor = 'pia@acme.example' ORDER BY created_at, id`,
    );
    expect(rows).toEqual([
      { action: 'member.signed_in', target: 'by link' },
      { action: 'passkey.registered', target: 'Work laptop' },
      { action: 'member.signed_in', target: 'by passkey' },
    ]);

    // The list on the narrowest phone the portal supports (360 px): its dates wrap, nothing scrolls
    // sideways. Two passkeys, both used, with a long name: every date cell has a date in it.
    const pia = (
      await t.db.query<{ id: string }>(`SELECT id FROM portal_members WHERE email = $1`, [
        'pia@acme.example',
      ])
    ).rows[0]!.id;
    await createPortalPasskeysRepo(t.db).add({
      id: 'cred-second-device',
      memberId: pia,
      publicKey: new Uint8Array(77),
      counter: 0,
      transports: ['usb'],
      name: 'YubiKey 5C NFC (desk drawer, office)',
    });
    await createPortalPasskeysRepo(t.db).markUsed('cred-second-device', 1);
    await page.setViewportSize({ width: 360, height: 740 });
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Your account' })
      .click();
    await page.getByText('YubiKey 5C NFC (desk drawer, office)', { exact: true }).waitFor();
    const widths = (await page.evaluate(`(() => {
      const cells = [...document.querySelectorAll('#passkeys-heading ~ table td')];
      return {
        scrollWidth: document.documentElement.scrollWidth,
        cells: cells.filter((c) => c.scrollWidth > c.clientWidth).map((c) => c.textContent),
      };
    })()`)) as { scrollWidth: number; cells: string[] };
    expect(widths).toEqual({ scrollWidth: expect.any(Number), cells: [] });
    expect(widths.scrollWidth).toBeLessThanOrEqual(360);
    await createPortalPasskeysRepo(t.db).remove(pia, 'cred-second-device');
    await page.setViewportSize({ width: 1200, height: 760 });

    // A lost device: its passkey removed, it no longer signs in, although the authenticator still
    // holds the credential. The session is made older than the 10 minutes that removing allows:
    // signing in again (here with the passkey) returns to the removal page, not the keys page.
    const session = (await page.context().cookies()).find((c) => c.name === 'portal_session')!;
    await t.db.query(
      `UPDATE portal_sessions SET created_at = now() - interval '11 minutes' WHERE id_hash = $1`,
      [hashSessionId(session.value)],
    );
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Your account' })
      .click();
    await page.getByRole('link', { name: 'Remove Work laptop' }).click();
    await page.getByText('Removing a passkey needs a fresh sign-in').waitFor();
    await page.getByRole('link', { name: 'Sign in again' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('heading', { name: 'Remove a passkey', level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(
      /^\/portal\/live\/account\/passkeys\/[^/]+\/remove$/,
    );
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await page.getByText('Passkey removed. It can no longer sign in.').waitFor();
    await page.getByText('No passkeys yet').waitFor();
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByText('This passkey is not registered here').waitFor();
    expect(await page.getByRole('heading', { name: 'API keys', level: 1 }).count()).toBe(0);
    const { rows: after } = await t.db.query<{ action: string; target: string }>(
      `SELECT action, target FROM portal_audit_log WHERE actor = 'pia@acme.example'
       ORDER BY created_at, id OFFSET 3`,
    );
    expect(after).toEqual([
      { action: 'member.signed_in', target: 'by passkey' },
      { action: 'passkey.removed', target: 'Work laptop' },
    ]);
  });

  it('keeps no copy of a new key in the tab: not on Back, not in storage, not after sign-out', async () => {
    const page = await signIn('kim@acme.example', 'owner');
    // No request of the portal's pages answers 404 (a missing /favicon.ico did at every load).
    const missing: string[] = [];
    page.on('response', (r) => {
      if (r.status() === 404) missing.push(r.url());
    });
    const stored = () =>
      page.evaluate(
        `JSON.stringify([...Array(sessionStorage.length).keys()].map((i) => sessionStorage.getItem(sessionStorage.key(i))))
         + JSON.stringify([...Array(localStorage.length).keys()].map((i) => localStorage.getItem(localStorage.key(i))))`,
      ) as Promise<string>;
    await page.getByLabel('Key name').fill('history probe');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByLabel('New API key').textContent())!.trim();
    expect(key).toMatch(/^svc_live_/);
    const nav = page.getByRole('navigation', { name: 'Sections' });
    await nav.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    expect(await stored()).not.toContain(key);

    // Back, still signed in: the keys page again, from the server, without the key.
    await page.goBack();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByRole('cell', { name: 'history probe', exact: true }).waitFor();
    expect(await page.content()).not.toContain(key);
    await nav.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();

    // Signed out, Back asks for a sign-in and the tab holds nothing of the key.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('status').getByText('You are signed out.').waitFor();
    await page.goBack();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.content()).not.toContain(key);
    expect(await stored()).not.toContain(key);
    expect(await page.evaluate("sessionStorage.getItem('htmx-history-cache')")).toBeNull();
    expect(missing).toEqual([]);
  });
});
