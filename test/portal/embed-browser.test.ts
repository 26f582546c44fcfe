/**
 * The Embed page in real Chromium: reached from the navigation; an origin with a path refused in
 * words (the value kept, the field marked invalid); two origins allowed and listed; the snippet
 * copied to the clipboard exactly as shown; one origin removed with its button. Axe on each state.
 *
 * PORTAL_SCREENSHOTS=docs/portal writes docs/portal/embed-settings.png.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedSettingsRepo } from '../../src/db/embed-settings.ts';
import { createPartnersRepo, type Partner } from '../../src/db/partners.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { inviteMember, issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import type { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy } from '../../src/webhooks/address-policy.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { chromiumMissing, launchChromium, seriousA11yViolations } from './browser.ts';
import { seedProducts } from './products-fixture.ts';

const missing = chromiumMissing();
const shots = process.env.PORTAL_SCREENSHOTS;

describe.skipIf(missing)('the Embed page in Chromium', { timeout: 120_000 }, () => {
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let browser: Browser;
  let page: Page;
  let partner: Partner;
  const outbox = mkdtempSync(path.join(tmpdir(), 'pys-embed-outbox-'));

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    let port = 0;
    app = await buildTestApp({
      db: t.db,
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
    const portal = `http://localhost:${port}/portal`;
    partner = await createPartnersRepo(t.db).create('Acme Wallet');
    await seedProducts(t.db, partner.id, [
      {
        slug: 'acme-usdc-core',
        displayName: 'USDC Core',
        environment: 'live',
        status: 'active',
        days: 0,
      },
    ]);
    const member = await inviteMember(t.db, {
      partnerId: partner.id,
      email: 'ana@acme.example',
      role: 'owner',
    });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: `http://localhost:${port}`,
    });
    page = await context.newPage();
    await page.goto(await issueSignInUrl(t.db, portal, member.id));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    if (shots) mkdirSync(shots, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await t?.drop();
    rmSync(outbox, { recursive: true, force: true });
  });

  async function check(name?: string) {
    expect(await seriousA11yViolations(page), `${name ?? 'embed'}: accessibility`).toEqual([]);
    if (shots && name) {
      await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
    }
  }

  it('allows origins, refuses a non-origin in words, copies the snippet, removes an origin', async () => {
    const settings = createEmbedSettingsRepo(t.db);
    const { embedId } = (await settings.get(partner.id, 'live'))!;

    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Embed' })
      .click();
    await page.getByRole('heading', { name: 'Embed', level: 1 }).waitFor();
    await page.getByText('No origins yet').waitFor();
    expect((await page.locator('#embed-id').textContent())?.trim()).toBe(embedId);
    await check();

    // A URL with a path is not an origin: said in words, the value kept to correct it.
    const field = page.getByLabel('Origin', { exact: true });
    await field.fill('https://wallet.acme.example/checkout');
    await page.getByRole('button', { name: 'Allow origin' }).click();
    await page
      .getByRole('alert')
      .getByText(/is not an origin: no path/)
      .waitFor();
    expect(await field.inputValue()).toBe('https://wallet.acme.example/checkout');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await check();

    await field.fill('https://wallet.acme.example');
    await page.getByRole('button', { name: 'Allow origin' }).click();
    await page.getByRole('status').getByText('is allowed').waitFor();
    await page.getByLabel('Origin', { exact: true }).fill('https://Checkout.Acme.Example:8443/');
    await page.getByRole('button', { name: 'Allow origin' }).click();
    await page
      .getByRole('cell', { name: 'https://checkout.acme.example:8443', exact: true })
      .waitFor();
    await page.getByRole('cell', { name: 'https://wallet.acme.example', exact: true }).waitFor();
    expect((await settings.get(partner.id, 'live'))!.allowedOrigins).toEqual([
      'https://checkout.acme.example:8443',
      'https://wallet.acme.example',
    ]);

    // The snippet names the host helper and this environment's product, and copies as shown.
    const snippet = (await page.locator('#embed-snippet').textContent())!.trim();
    expect(snippet).toContain('<script src="https://yield.example.com/embed/host.js"></script>');
    expect(snippet).toContain(`src: 'https://yield.example.com/embed/${embedId}/acme-usdc-core'`);
    await check('embed-settings');
    await page.getByRole('button', { name: 'Copy snippet' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(snippet);

    await page.getByRole('button', { name: 'Remove https://checkout.acme.example:8443' }).click();
    await page.getByRole('status').getByText('is removed').waitFor();
    expect(
      await page
        .getByRole('cell', { name: 'https://checkout.acme.example:8443', exact: true })
        .count(),
    ).toBe(0);
    expect((await settings.get(partner.id, 'live'))!.allowedOrigins).toEqual([
      'https://wallet.acme.example',
    ]);
    await check();
  });
});
