/**
 * `yield-service portal invite`, run in process on an embedded database: it adds the first owner
 * and prints a one-time sign-in URL that signs them in to the portal served on the same database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../../src/db/client.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { buildApp } from '../../src/server/app.ts';
import { createAddressPolicy } from '../../src/webhooks/address-policy.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { captureLogger } from '../helpers/logs.ts';
import { Client } from './harness.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-portal-cli-'));
const PUBLIC = 'http://localhost:3999/portal';
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Runs one command in this process (helpers/cli.ts) on the embedded database of DATA_DIR. */
const run = (args: string[]) =>
  runCliInProcess(args, {
    env: {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      LOCAL_CHAIN_PORT: '1',
      PORTAL_PUBLIC_URL: PUBLIC,
    },
  });

/** Its stdout; a failed command throws its stderr. */
async function cli(args: string[]): Promise<string> {
  const r = await run(args);
  if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.err}`);
  return r.out;
}

describe('portal CLI', { timeout: 120_000 }, () => {
  it('invites the first owner with a one-time URL that signs them in once', async () => {
    await cli(['partner', 'create', '--name', 'Acme Wallet']);
    await cli(['partner', 'create', '--name', 'Other Pay']);
    const printed = await cli([
      'portal',
      'invite',
      '--partner',
      'Acme Wallet',
      '--email',
      'Ana@Acme.example',
    ]);
    expect(printed).toMatch(/^Invited Ana@Acme\.example as owner of Acme Wallet \(mbr_\w+\)\.\n/);
    const url = /One-time sign-in URL \(works once, for 15 minutes\): (\S+)/.exec(printed)![1]!;
    expect(url).toMatch(/^http:\/\/localhost:3999\/portal\/sign-in\/link\?token=[\w-]{43}$/);

    // Again: the same member, a new link; the role is kept.
    const again = JSON.parse(
      await cli([
        'portal',
        'invite',
        '--partner',
        'Acme Wallet',
        '--email',
        'ana@acme.example',
        '--role',
        'viewer',
        '--json',
      ]),
    );
    expect(again).toMatchObject({ created: false, role: 'owner', email: 'Ana@Acme.example' });
    expect(again.sign_in_url).not.toBe(url);

    await expect(
      cli(['portal', 'invite', '--partner', 'Other Pay', '--email', 'ana@acme.example']),
    ).rejects.toThrow(/already a member of another partner's team \(Acme Wallet\)/);
    await expect(
      cli(['portal', 'invite', '--partner', 'Nobody', '--email', 'x@y.example']),
    ).rejects.toThrow(/no partner named "Nobody"/);

    const db = await createDatabase({ engine: 'pglite', dataDir: path.join(dataDir, 'pglite') });
    const app = await buildApp({
      db,
      logger: captureLogger().logger,
      portal: {
        mailer: createOutboxMailer(path.join(dataDir, 'outbox'), 'p@test'),
        publicUrl: () => PUBLIC,
        idleMs: 60_000,
        addresses: createAddressPolicy(),
      },
    });
    try {
      const browser = new Client(app, PUBLIC);
      const signedIn = await browser.signInWithLink(url);
      expect(signedIn.status).toBe(303);
      expect((await browser.get('/portal/live/keys')).body).toContain('Acme Wallet');
      expect((await new Client(app, PUBLIC).signInWithLink(url)).status).toBe(410);
      const { rows } = await db.query<{ action: string; actor: string }>(
        'SELECT action, actor FROM portal_audit_log ORDER BY created_at, id',
      );
      expect(rows).toEqual([
        { action: 'member.invited', actor: 'operator' },
        { action: 'member.signed_in', actor: 'Ana@Acme.example' },
      ]);
    } finally {
      await app.close();
      await db.close();
    }
  });

  it('refuses a role that does not exist', async () => {
    const r = await run([
      'portal',
      'invite',
      '--partner',
      'Acme Wallet',
      '--email',
      'b@acme.example',
      '--role',
      'god',
    ]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/must be owner, admin, developer or viewer/);
  });
});
