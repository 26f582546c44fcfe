/**
 * `yield-service key …`: the key is shown once, listed masked, revocable. Run in this process (the
 * bin's own commander program, helpers/cli.ts) on a test database; the refusal while another
 * process holds the embedded database of DATA_DIR spawns the bin (the key group's smoke test).
 */
import { renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockDataDir } from '../src/db/pglite-lock.ts';
import { formatUtc } from '../src/time-format.ts';
import { runCliInProcess } from './helpers/cli.ts';
import { freshDatabase, scratchDir, type TestDatabase } from './helpers/db.ts';
import { spawnCli } from './helpers/process.ts';

// Beside the test databases (scratchDir): the copy is renamed in, which needs one file system.
const dataDir = scratchDir('pys-cli-keys-');
// A port where no local chain answers: these commands never need one.
const env = { DATA_DIR: dataDir, LOG_LEVEL: 'silent', LOCAL_CHAIN_PORT: '1' };
let t: TestDatabase;
beforeAll(async () => {
  t = await freshDatabase('pglite');
  // For the spawned bin, a migrated copy in DATA_DIR: no initdb (seconds).
  const copy = await freshDatabase('pglite');
  await copy.db.close();
  renameSync(copy.location, path.join(dataDir, 'pglite'));
});
afterAll(async () => {
  await t.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const cli = (args: string[]) => runCliInProcess(args, { env, database: t.db });

/** The bin as its own process: the smoke test of the key commands. */
async function spawned(args: string[]) {
  const p = spawnCli(args, env);
  const { code } = await p.exited;
  return { code, out: p.stdout(), err: p.stderr() };
}

describe('key CLI', () => {
  it('creates a key shown once, lists it masked, revokes it once', async () => {
    expect((await cli(['partner', 'create', '--name', 'Acme Wallet'])).code).toBe(0);
    const created = await cli([
      'key',
      'create',
      '--partner',
      'Acme Wallet',
      '--env',
      'test',
      '--json',
    ]);
    expect(created.code).toBe(0);
    const { id, api_key: key } = JSON.parse(created.out) as { id: string; api_key: string };
    expect(key).toMatch(/^svc_test_[A-Za-z0-9_-]{43}$/);

    const listed = await cli(['key', 'list', '--json']);
    expect(listed.code).toBe(0);
    expect(listed.out).not.toContain(key);
    expect(JSON.parse(listed.out)).toEqual([
      expect.objectContaining({
        id,
        environment: 'test',
        key: `svc_test_…${key.slice(-4)}`,
        revoked_at: null,
      }),
    ]);

    expect((await cli(['key', 'revoke', id])).out).toBe(`Revoked ${id}.\n`);
    const again = await cli(['key', 'revoke', id]);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/no active key/);
    expect(JSON.parse((await cli(['key', 'list', '--json'])).out)[0].revoked_at).not.toBeNull();

    // The partner's team sees the operator's changes in its audit log, as it sees its own.
    const rolled = await cli([
      'key',
      'create',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--json',
    ]);
    const liveId = (JSON.parse(rolled.out) as { id: string }).id;
    const roll = await cli(['key', 'roll', liveId, '--expires', 'now', '--json']);
    const { id: newId, old_key_expires_at: ends } = JSON.parse(roll.out) as {
      id: string;
      old_key_expires_at: string;
    };
    const { rows } = await t.db.query<{
      action: string;
      actor: string;
      member_id: string | null;
      environment: string;
      target: string;
    }>(
      `SELECT action, actor, member_id, environment, target FROM portal_audit_log
       ORDER BY created_at, id`,
    );
    const masked = `svc_test_…${key.slice(-4)}`;
    expect(rows).toEqual([
      {
        action: 'key.created',
        actor: 'operator',
        member_id: null,
        environment: 'test',
        target: `${id} ${masked}`,
      },
      {
        action: 'key.revoked',
        actor: 'operator',
        member_id: null,
        environment: 'test',
        target: `${id} ${masked}`,
      },
      {
        action: 'key.created',
        actor: 'operator',
        member_id: null,
        environment: 'live',
        target: expect.stringMatching(new RegExp(`^${liveId} svc_live_…`)),
      },
      {
        action: 'key.rolled',
        actor: 'operator',
        member_id: null,
        environment: 'live',
        target: `${liveId} → ${newId}, old key ends ${formatUtc(new Date(ends))}`,
      },
    ]);
  });

  it('refuses, in one line, while another process has the embedded database open', {
    timeout: 60_000,
  }, async () => {
    // This test process takes the lock, as a running service would; the bin is spawned.
    const release = lockDataDir(path.join(dataDir, 'pglite'));
    try {
      const r = await spawned(['key', 'list']);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(
        new RegExp(`^yield-service: the embedded database .* is in use by process ${process.pid} `),
      );
      expect(r.err.trim().split('\n')).toHaveLength(1);
    } finally {
      release();
    }
    // Released: the command opens DATA_DIR's database as the bin does (no database passed in).
    expect((await runCliInProcess(['key', 'list'], { env })).code).toBe(0);
  });

  it('refuses an unknown partner or environment with a non-zero exit', async () => {
    const unknown = await cli(['key', 'create', '--partner', 'Nobody', '--env', 'live']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no partner named "Nobody"/);
    const env = await cli(['key', 'create', '--partner', 'Acme Wallet', '--env', 'prod']);
    expect(env.code).not.toBe(0);
    expect(env.err).toMatch(/live or test/);
  });
});
