/**
 * `yield-service embed show|origins add|remove|set`, run in this process (the same commander
 * program the bin runs; a child process per command costs seconds each on a loaded machine) on a
 * PGlite DATA_DIR made from the migrated template.
 */
import { renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../../src/db/client.ts';
import { runCliInProcess } from '../helpers/cli.ts';
import { freshDatabase, scratchDir } from '../helpers/db.ts';

// Beside the test databases (scratchDir): the copy is renamed in, which needs one file system.
const dataDir = scratchDir('pys-embed-cli-');

beforeAll(async () => {
  const t = await freshDatabase('pglite');
  await t.db.close();
  renameSync(t.location, path.join(dataDir, 'pglite'));
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Runs one command; answers its stdout, or the error it ended with. */
async function cli(args: string[]): Promise<{ out: string; error?: string }> {
  // The embedded database of DATA_DIR, opened and closed by each command as the bin does.
  const r = await runCliInProcess(args, { env: { DATA_DIR: dataDir, LOG_LEVEL: 'silent' } });
  return r.code === 0 ? { out: r.out } : { out: r.out, error: r.err };
}

describe('embed command', () => {
  it('shows the embed id and manages the allowed origins of one partner environment', async () => {
    expect((await cli(['partner', 'create', '--name', 'Acme'])).error).toBeUndefined();

    const shown = await cli(['embed', 'show', '--partner', 'Acme', '--env', 'live', '--json']);
    const live = JSON.parse(shown.out);
    expect(live).toMatchObject({ partner: 'Acme', environment: 'live', allowed_origins: [] });
    expect(live.embed_id).toMatch(/^emb_[1-9A-HJ-NP-Za-km-z]{22}$/);

    const added = await cli([
      ...['embed', 'origins', 'add', '--partner', 'Acme', '--env', 'live'],
      ...['--origin', 'https://Wallet.Example/', '--origin', 'http://localhost:5173', '--json'],
    ]);
    expect(JSON.parse(added.out)).toMatchObject({
      embed_id: live.embed_id, // the id never changes with the origins
      allowed_origins: ['http://localhost:5173', 'https://wallet.example'],
    });

    const removed = await cli([
      ...['embed', 'origins', 'remove', '--partner', 'Acme', '--env', 'live'],
      ...['--origin', 'http://localhost:5173'],
    ]);
    expect(removed.out).toContain(`Embed of Acme (live): ${live.embed_id}`);
    expect(removed.out).toContain('  https://wallet.example');
    expect(removed.out).not.toContain('localhost');

    const cleared = await cli(['embed', 'origins', 'set', '--partner', 'Acme', '--env', 'live']);
    expect(cleared.out).toContain('Allowed origins: none');

    // The other environment is separate: its own id, no origins.
    const test = JSON.parse(
      (await cli(['embed', 'show', '--partner', 'Acme', '--env', 'test', '--json'])).out,
    );
    expect(test.embed_id).not.toBe(live.embed_id);
    expect(test.allowed_origins).toEqual([]);

    // Each origin allowed or removed is in the partner's portal audit log, by operator.
    const db = await createDatabase({ engine: 'pglite', dataDir: path.join(dataDir, 'pglite') });
    try {
      const { rows } = await db.query<{ actor: string; action: string; target: string }>(
        `SELECT actor, action, target FROM portal_audit_log WHERE environment = 'live'
         ORDER BY created_at, action, target`,
      );
      expect(rows).toEqual([
        { actor: 'operator', action: 'embed.origin_added', target: 'http://localhost:5173' },
        { actor: 'operator', action: 'embed.origin_added', target: 'https://wallet.example' },
        { actor: 'operator', action: 'embed.origin_removed', target: 'http://localhost:5173' },
        { actor: 'operator', action: 'embed.origin_removed', target: 'https://wallet.example' },
      ]);
    } finally {
      await db.close();
    }
  });

  it('refuses what is not an origin, and an unknown partner, saying why', async () => {
    const bad = await cli([
      ...['embed', 'origins', 'add', '--partner', 'Acme', '--env', 'live'],
      ...['--origin', 'https://wallet.example/checkout'],
    ]);
    expect(bad.error).toMatch(/is not an origin/);
    const plain = await cli([
      ...['embed', 'origins', 'add', '--partner', 'Acme', '--env', 'live'],
      ...['--origin', 'http://wallet.example'],
    ]);
    expect(plain.error).toMatch(/must use https:\/\/; http:\/\/ is accepted only for a local page/);
    const unknown = await cli(['embed', 'show', '--partner', 'Nobody', '--env', 'live']);
    expect(unknown.error).toMatch(/no partner named "Nobody"/);
  });
});
