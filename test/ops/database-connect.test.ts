/**
 * A DATABASE_URL that does not lead to a working PostgreSQL, as an operator meets it: the real bin
 * against a port nobody listens on, a server that accepts and never answers, a host that does not
 * resolve, a database that does not exist. Each ends promptly with one line naming DATABASE_URL's
 * host:port/database (never its password) and what to check; `start` never says it is listening.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.ts';
import { freshDatabase, postgresAdminUrl } from '../helpers/db.ts';
import { deadPort } from '../helpers/net.ts';
import { spawnCli, waitFor } from '../helpers/process.ts';
import { scratchRoot } from '../helpers/scratch.ts';

const PASSWORD = 'SuperSecretPw';
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(scratchRoot(), 'pys-dbconn-'));
  dirs.push(d);
  return d;
};
const servers: { server: Server; sockets: Socket[] }[] = [];
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const { sockets } of servers) for (const s of sockets) s.destroy();
  await Promise.all(servers.map(({ server }) => new Promise((r) => server.close(r))));
});

/** A TCP server that accepts connections and never sends a byte (a hung server, a wrong port). */
async function silentServer(): Promise<{ port: number; accepted: () => number }> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
  });
  servers.push({ server, sockets });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { port, accepted: () => sockets.length };
}

describe('a DATABASE_URL without a working PostgreSQL behind it', { timeout: 120_000 }, () => {
  it.concurrent('migrate against a server that never answers exits 1 after the connect deadline, naming DATABASE_URL', async () => {
    const silent = await silentServer();
    const started = Date.now();
    const p = spawnCli(['migrate'], {
      DATABASE_URL: `postgres://postgres:${PASSWORD}@127.0.0.1:${silent.port}/qa_ops`,
    });
    const { code } = await p.exited;
    const elapsed = Date.now() - started;
    expect(code).toBe(1);
    expect(silent.accepted()).toBeGreaterThan(0);
    // The 10 s deadline, plus the bin's start-up through tsx on a loaded machine.
    expect(elapsed).toBeLessThan(40_000);
    expect(p.stderr()).toBe(
      `yield-service: cannot connect to PostgreSQL at 127.0.0.1:${silent.port}/qa_ops (DATABASE_URL): no answer within 10 s: check that the host and port in DATABASE_URL are PostgreSQL's (not another service that accepts and stays silent) and that it is not overloaded\n`,
    );
    expect(p.stdout()).toBe('');
  });

  it.concurrent('start against a server that never answers stops at once on SIGTERM, without ever listening', async () => {
    const silent = await silentServer();
    const p = spawnCli(['start'], {
      DATA_DIR: tempDir(),
      PORT: '0',
      ROLES: 'api',
      DATABASE_URL: `postgres://postgres:${PASSWORD}@127.0.0.1:${silent.port}/qa_ops`,
    });
    // The service is waiting on the database once its connection was accepted.
    await waitFor(() => (silent.accepted() > 0 ? true : undefined), 60_000, 'a connection');
    const signalled = Date.now();
    p.child.kill('SIGTERM');
    const { code } = await p.exited;
    // Well within SHUTDOWN_TIMEOUT_MS (10 s): the wait is given up, not sat out.
    expect(Date.now() - signalled).toBeLessThan(5_000);
    expect(code).toBe(1);
    expect(p.stdout()).not.toMatch(/listening/i);
    expect(p.stdout()).not.toMatch(/timed out/);
    expect(p.stdout() + p.stderr()).not.toContain(PASSWORD);
  });

  it.concurrent('start against a port nobody listens on says so in one line, and never says it is listening', async () => {
    const port = await deadPort();
    const p = spawnCli(['start'], {
      DATA_DIR: tempDir(),
      PORT: '0',
      ROLES: 'api',
      DATABASE_URL: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/qa_ops`,
    });
    expect((await p.exited).code).toBe(1);
    expect(p.stderr()).toBe(
      `yield-service: cannot connect to PostgreSQL at 127.0.0.1:${port}/qa_ops (DATABASE_URL): connection refused: check that PostgreSQL runs and listens on that host and port\n`,
    );
    expect(p.stdout()).not.toMatch(/listening/i);
    expect(p.stdout()).not.toContain(PASSWORD);
  });

  it('an operator command against a refused port or an unknown host names DATABASE_URL and what to check', async () => {
    const port = await deadPort();
    const refused = await runCliInProcess(['partner', 'list'], {
      env: { DATABASE_URL: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/qa_ops` },
    });
    expect(refused.code).toBe(1);
    expect(refused.err).toBe(
      `yield-service: cannot connect to PostgreSQL at 127.0.0.1:${port}/qa_ops (DATABASE_URL): connection refused: check that PostgreSQL runs and listens on that host and port\n`,
    );
    const unknown = await runCliInProcess(['migrate'], {
      env: { DATABASE_URL: `postgres://postgres:${PASSWORD}@db.invalid:5432/qa_ops` },
    });
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(
      /^yield-service: cannot connect to PostgreSQL at db\.invalid:5432\/qa_ops \(DATABASE_URL\): host "db\.invalid" not found \((ENOTFOUND|EAI_AGAIN)\): check the host name in DATABASE_URL\n$/,
    );
    const noHost = await runCliInProcess(['migrate'], {
      env: { DATABASE_URL: `postgresql:/postgres:${PASSWORD}@127.0.0.1:${port}/qa_ops` },
    });
    expect(noHost.code).toBe(1);
    expect(noHost.err).toMatch(
      /^yield-service: cannot connect to PostgreSQL at \(a URL without a host/,
    );
    for (const r of [refused, unknown, noHost]) expect(r.out + r.err).not.toContain(PASSWORD);
  });

  it.runIf(postgresAdminUrl())(
    'a database that does not exist, or a wrong password, says which and what to do',
    async () => {
      const admin = new URL(postgresAdminUrl()!);
      const missing = new URL(admin);
      missing.pathname = '/pys_no_such_database';
      const r = await runCliInProcess(['migrate'], { env: { DATABASE_URL: missing.toString() } });
      expect(r.code).toBe(1);
      expect(r.err).toBe(
        `yield-service: cannot connect to PostgreSQL at ${admin.hostname}:${admin.port || '5432'}/pys_no_such_database (DATABASE_URL): database "pys_no_such_database" does not exist: create it (createdb) or correct the database name in DATABASE_URL\n`,
      );
      const unknownUser = new URL(admin);
      unknownUser.username = 'pys_no_such_role';
      unknownUser.password = PASSWORD;
      const auth = await runCliInProcess(['migrate'], {
        env: { DATABASE_URL: unknownUser.toString() },
      });
      expect(auth.code).toBe(1);
      expect(auth.err).toMatch(/\(DATABASE_URL\): .*pys_no_such_role.*: check the user name/);
      expect(auth.err).not.toContain(PASSWORD);
    },
  );

  it.runIf(postgresAdminUrl())(
    'migrate names the PostgreSQL database it migrated, without the password',
    async ({ onTestFinished }) => {
      const own = await freshDatabase('postgres', { migrated: false });
      onTestFinished(() => own.drop());
      const url = new URL(own.location);
      const r = await runCliInProcess(['migrate'], { env: { DATABASE_URL: own.location } });
      expect(r.code).toBe(0);
      const target = `PostgreSQL at ${url.hostname}:${url.port || '5432'}${url.pathname} (DATABASE_URL)`;
      expect(r.out).toMatch(/^Applied \d+ migration\(s\) to PostgreSQL at /);
      expect(r.out).toContain(` to ${target}: 0001_partners`);
      const again = await runCliInProcess(['migrate'], { env: { DATABASE_URL: own.location } });
      expect(again.out).toBe(`Database is up to date: ${target}.\n`);
      if (url.password) expect(r.out + again.out).not.toContain(url.password);
    },
  );
});
