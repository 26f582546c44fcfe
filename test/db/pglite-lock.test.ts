/**
 * The embedded database has one owner at a time: a second open of the same data directory (in this
 * process or another) is refused with a clear error instead of corrupting the files, and a lock
 * left by a process that is gone is taken over.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase } from '../../src/db/client.ts';
import { DatabaseLockedError, lockDataDir } from '../../src/db/pglite-lock.ts';
import { freshDatabase } from '../helpers/db.ts';
import { spawnCli } from '../helpers/process.ts';

const dirs: string[] = [];
function dataDir(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'pys-lock-'));
  dirs.push(root);
  return path.join(root, 'pglite');
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const writeLock = (dir: string, pid: number, host = hostname()) =>
  writeFileSync(`${dir}.lock`, JSON.stringify({ pid, host, since: '2026-01-01T00:00:00.000Z' }));

/** A process that has exited: its pid is free (reuse within the test is not a concern). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  const pid = child.pid as number;
  await new Promise((r) => child.once('exit', r));
  return pid;
}

describe('embedded database lock', () => {
  it('refuses a second open of the same directory until the first closes', async () => {
    const t = await freshDatabase('pglite');
    const dir = t.location;
    try {
      expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pid).toBe(process.pid);
      const second = createDatabase({ engine: 'pglite', dataDir: dir });
      await expect(second).rejects.toBeInstanceOf(DatabaseLockedError);
      await expect(second).rejects.toMatchObject({ code: 'database_locked' });
      await expect(second).rejects.toThrow(new RegExp(`in use by process ${process.pid}`));
      // The refused open changed nothing: the first still works, and the lock is still its own.
      expect((await t.db.query<{ n: number }>('SELECT 1 AS n')).rows[0]?.n).toBe(1);
      await t.db.close();
      expect(existsSync(`${dir}.lock`)).toBe(false);
      // Taken over after a crash: a lock left by a process that is gone.
      writeLock(dir, await deadPid());
      const again = await createDatabase({ engine: 'pglite', dataDir: dir });
      expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pid).toBe(process.pid);
      expect((await again.query('SELECT count(*) FROM partners')).rows).toHaveLength(1);
      await again.close();
      expect(existsSync(`${dir}.lock`)).toBe(false);
    } finally {
      await t.drop();
    }
  });

  it('a second service start on the same DATA_DIR exits 1 with one line, touching nothing', async () => {
    const root = path.dirname(dataDir());
    const release = lockDataDir(path.join(root, 'pglite')); // as the running service holds it
    try {
      const p = spawnCli(['start'], {
        DATA_DIR: root,
        PORT: '0',
        LOCAL_CHAIN_PORT: '1',
        LOG_LEVEL: 'silent',
      });
      const { code } = await p.exited;
      expect(code).toBe(1);
      expect(p.stderr()).toMatch(
        new RegExp(`^yield-service: the embedded database .* is in use by process ${process.pid} `),
      );
      expect(p.stderr().trim().split('\n')).toHaveLength(1);
      // PGlite never opened the directory: nothing was created in it.
      expect(existsSync(path.join(root, 'pglite', 'PG_VERSION'))).toBe(false);
    } finally {
      release();
    }
  });

  it('refuses while another live process holds the lock, naming it', async () => {
    const dir = dataDir();
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeLock(dir, holder.pid as number);
      expect(() => lockDataDir(dir)).toThrow(
        new RegExp(`in use by process ${holder.pid} .*DATABASE_URL`),
      );
      // Its lock file is left alone.
      expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pid).toBe(holder.pid);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('refuses a lock from another host, which it cannot check', () => {
    const dir = dataDir();
    writeLock(dir, process.pid, 'some-other-host');
    expect(() => lockDataDir(dir)).toThrow(/on some-other-host/);
  });

  it('takes over a lock whose process is gone', async () => {
    const dir = dataDir();
    writeLock(dir, await deadPid());
    const release = lockDataDir(dir);
    expect(JSON.parse(readFileSync(`${dir}.lock`, 'utf8')).pid).toBe(process.pid);
    release();
    expect(existsSync(`${dir}.lock`)).toBe(false);
  });

  it('takes over a lock with its own pid that it does not hold (a restarted container)', () => {
    const dir = dataDir();
    writeLock(dir, process.pid);
    const release = lockDataDir(dir);
    expect(() => lockDataDir(dir)).toThrow(DatabaseLockedError);
    release();
    release(); // idempotent
    expect(existsSync(`${dir}.lock`)).toBe(false);
  });

  it('takes over an unreadable lock file (a crash while writing it)', () => {
    const dir = dataDir();
    writeFileSync(`${dir}.lock`, '{"pid":');
    const release = lockDataDir(dir);
    release();
  });
});
