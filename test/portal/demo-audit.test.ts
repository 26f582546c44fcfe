/**
 * The demo's audit log is not empty: provisioning a demo (a local chain's deployment, a fresh
 * database) makes each partner's keys, inbound secrets, embed origin and first owner through the
 * operations the portal and the CLI use (src/operations/), as the actor `demo`, so the portal's
 * audit page shows what the demo partner started with. Real anvil, real PGlite, the real app.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { DEMO_PARTNERS } from '../../src/chain/local/demo-manifest.ts';
import { ensureLocalChain, type LocalChain } from '../../src/chain/local/ensure.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { provisionDemoEmbeds } from '../../src/embed/demo.ts';
import { refreshDemoPortalAccess } from '../../src/portal/demo.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import type { buildApp } from '../../src/server/app.ts';
import { provisionDemo } from '../../src/sync/demo.ts';
import { writeDemoCredentials } from '../../src/sync/demo-credentials.ts';
import { createAddressPolicy } from '../../src/webhooks/address-policy.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { Client, text } from './harness.ts';

const PUBLIC_URL = 'http://localhost/portal';

describe('the demo’s audit log', { timeout: 180_000 }, () => {
  let dataDir: string;
  let chain: LocalChain;
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildApp>>;
  let logins: Map<string, string>;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'pys-demo-audit-'));
    chain = await ensureLocalChain({ dataDir, seed: 'demo-audit', days: 2, port: 0 });
    t = await freshDatabase('pglite');
    const d = chain.deployment;
    const secretBox = createSecretBox(randomBytes(32));
    const demo = await provisionDemo({
      db: t.db,
      logger: captureLogger().logger,
      deployment: d,
      client: createChainClient({ chainId: d.chainId, name: 'local', rpcUrls: [d.rpcUrl] }),
      secretBox,
    });
    expect(demo.provisioned).toBe(true);
    // As `start` goes on: the embeds' origin (the other loopback name), the credentials file, and
    // the portal's first owner of each partner with a one-time sign-in URL.
    const partners = await provisionDemoEmbeds(
      t.db,
      demo.credentials,
      'http://127.0.0.1:3000/embed',
    );
    writeDemoCredentials(dataDir, {
      base_url: 'http://127.0.0.1:3000',
      rpc_url: d.rpcUrl,
      partners,
    });
    expect(await refreshDemoPortalAccess({ db: t.db, dataDir, publicUrl: PUBLIC_URL })).toBe(true);
    const written = JSON.parse(
      readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'),
    ) as {
      partners: Array<{ name: string; portal: { login_url: string } }>;
    };
    logins = new Map(written.partners.map((p) => [p.name, p.portal.login_url]));
    app = await buildTestApp({
      db: t.db,
      secretBox,
      portal: {
        mailer: createOutboxMailer(path.join(dataDir, 'outbox'), 'Portal <portal@test>'),
        publicUrl: () => PUBLIC_URL,
        idleMs: 60 * 60_000,
        addresses: createAddressPolicy([]),
      },
    });
    await app.ready();
  });

  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await chain?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('has a row as `demo` for every key, secret, origin and owner the demo made', async () => {
    for (const { name } of DEMO_PARTNERS) {
      const partner = (await createPartnersRepo(t.db).findByName(name))!;
      const { rows } = await t.db.query<{
        actor: string;
        action: string;
        environment: string | null;
        target: string;
        member_id: string | null;
        ip: string | null;
      }>(
        `SELECT actor, action, environment, target, member_id, ip FROM portal_audit_log
         WHERE partner_id = $1 ORDER BY created_at, id`,
        [partner.id],
      );
      // One transaction writes the keys and secrets, all at one now(): compared as a set.
      const summary = rows.map((r) => `${r.actor} ${r.action} ${r.environment ?? '-'}`).sort();
      expect(summary, name).toEqual(
        [
          'demo key.created live',
          'demo key.created live',
          'demo key.revoked live',
          'demo inbound.secret_set live',
          'demo key.created test',
          'demo key.created test',
          'demo key.revoked test',
          'demo inbound.secret_set test',
          'demo embed.origin_added live',
          'demo embed.origin_added test',
          'demo member.invited -',
        ].sort(),
      );
      expect(rows.every((r) => r.member_id === null && r.ip === null)).toBe(true);
      const targets = (action: string) =>
        rows.filter((r) => r.action === action).map((r) => r.target);
      expect(targets('member.invited')).toEqual([
        expect.stringMatching(/^owner@[a-z-]+\.example \(owner\)$/),
      ]);
      expect(targets('inbound.secret_set')).toEqual(['created', 'created']);
      expect(targets('embed.origin_added')).toEqual([
        'http://localhost:3000',
        'http://localhost:3000',
      ]);
      expect(targets('key.created')).toHaveLength(4);
      for (const k of targets('key.created')) expect(k).toMatch(/^key_\S+ svc_(live|test)_/);
    }
  });

  it('shows them on the owner’s audit page, and filters by `demo`', async () => {
    const [first] = DEMO_PARTNERS;
    const c = new Client(app, PUBLIC_URL);
    expect((await c.signInWithLink(logins.get(first!.name)!)).status).toBe(303);
    const page = await c.get('/portal/live/audit?who=demo');
    expect(page.status).toBe(200);
    const words = text(page.body);
    expect(words).toContain('demo');
    const rows = [...page.body.matchAll(/<tr><td data-label="When">(.*?)<\/tr>/gs)].map((m) =>
      text(m[1]!),
    );
    expect(rows).toHaveLength(11);
    expect(rows.every((r) => / demo /.test(` ${r} `))).toBe(true);
  });
});
