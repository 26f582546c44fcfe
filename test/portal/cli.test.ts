/**
 * `yield-service portal invite`, run in process on an embedded database: it adds the first owner
 * and prints a one-time sign-in URL that signs them in to the portal served on the same database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/api/app.ts';
import { buildCli } from '../../src/cli/main.ts';
import { createDatabase } from '../../src/db/client.ts';
import { createOutboxMailer } from '../../src/portal/mailer.ts';
import { captureLogger } from '../helpers/logs.ts';
import { Client } from './harness.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-portal-cli-'));
const PUBLIC = 'http://localhost:3999/portal';
const saved = { ...process.env };

beforeAll(() => {
  Object.assign(process.env, {
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    LOCAL_CHAIN_PORT: '1',
    PORTAL_PUBLIC_URL: PUBLIC,
  });
  delete process.env.DATABASE_URL;
});
afterAll(() => {
  process.env = saved;
  rmSync(dataDir, { recursive: true, force: true });
});

async function cli(args: string[]): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out += String(chunk);
    return true;
  });
  try {
    await buildCli()
      .exitOverride()
      .parseAsync(['node', 'yield-service', ...args]);
  } finally {
    spy.mockRestore();
  }
  return out;
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
    let err = '';
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      err += String(chunk);
      return true;
    });
    const exit = vi.spyOn(process, 'exit').mockImplementation((code) => {
      throw new Error(`exit ${code}`);
    });
    try {
      await expect(
        cli([
          'portal',
          'invite',
          '--partner',
          'Acme Wallet',
          '--email',
          'b@acme.example',
          '--role',
          'god',
        ]),
      ).rejects.toThrow('exit 1');
    } finally {
      stderr.mockRestore();
      exit.mockRestore();
    }
    expect(err).toMatch(/must be owner, admin, developer or viewer/);
  });
});
