/**
 * The API as a real process (the CLI's `start`), for the findings of #33 that only a process
 * shows: what it logs and echoes of a key sent in the wrong place, a SIGTERM during start-up, and
 * its shutdown (a clean one with PostgreSQL and Redis; one after a database fault) inside its
 * timeout with no error-level line.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { deadPort } from '../helpers/net.ts';
import { type Spawned, spawnCli, waitFor } from '../helpers/process.ts';
import { testRedisUrl } from '../helpers/redis.ts';
import { scratchRoot } from '../helpers/scratch.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(scratchRoot(), 'pys-robust-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A CHAINS_FILE naming one chain whose node is down: the service starts without building anvil. */
async function deadChainsFile(dir: string): Promise<string> {
  const file = path.join(dir, 'chains.json');
  writeFileSync(
    file,
    JSON.stringify([
      {
        chain_id: 31337,
        name: 'down',
        rpc_urls: [`http://127.0.0.1:${await deadPort()}`],
        confirmation_depth: 2,
        block_range_limit: 1000,
      },
    ]),
  );
  return file;
}

/** A DATA_DIR whose embedded database is already migrated: the start skips initdb. */
async function seededDir(): Promise<string> {
  const d = tempDir();
  const t = await freshDatabase('pglite');
  await t.db.close();
  renameSync(t.location, path.join(d, 'pglite'));
  return d;
}

const listening = (p: Spawned) =>
  waitFor(
    () => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1],
    120_000,
    `the listening line (stderr: ${p.stderr()})`,
  );

const jsonLines = (p: Spawned) =>
  p
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; [k: string]: unknown });

/** SIGTERM, then how long the process took to exit and how. */
async function stop(p: Spawned) {
  const started = Date.now();
  p.child.kill('SIGTERM');
  const exit = await p.exited;
  return { ...exit, ms: Date.now() - started };
}

describe('the API process (#33)', { timeout: 240_000 }, () => {
  it('never logs nor echoes a key sent in the path, the query or as X-Request-Id', async () => {
    const dir = await seededDir();
    const p = spawnCli(['start'], {
      DATA_DIR: dir,
      PORT: '0',
      ROLES: 'api',
      ALLOW_EMBEDDED_DATABASE: 'true', // one role alone on the embedded database, on purpose
      CHAINS_FILE: await deadChainsFile(dir),
    });
    const url = await listening(p);
    const key = `svc_live_${randomBytes(32).toString('base64url')}`;
    const body = randomBytes(32).toString('base64url').replace(/[-_]/g, 'x'); // a key's body alone
    const echoed: Array<string | null> = [];
    for (const [target, requestId] of [
      [`/api/partner/products/${key}`, undefined],
      [`/api/partner/products/${key}/apy-history?days=7`, undefined],
      [`/api/partner/products?note=${encodeURIComponent(key)}`, undefined],
      [`/api/partner/products/${body}`, undefined],
      ['/api/partner/products', key],
      ['/api/partner/products', body],
    ] as const) {
      const res = await fetch(`${url}${target}`, {
        headers: requestId ? { 'x-request-id': requestId } : {},
      });
      await res.arrayBuffer();
      expect(res.status).toBe(401);
      echoed.push(res.headers.get('x-request-id'));
    }
    // A plain id of the caller's is still echoed.
    const plain = await fetch(`${url}/health`, { headers: { 'x-request-id': 'trace-42.a:b' } });
    expect(plain.headers.get('x-request-id')).toBe('trace-42.a:b');
    const uuid = '550e8400-e29b-41d4-a716-446655440000';
    const withUuid = await fetch(`${url}/health`, { headers: { 'x-request-id': uuid } });
    expect(withUuid.headers.get('x-request-id')).toBe(uuid);
    const { code } = await stop(p);
    expect(code).toBe(0);
    // Neither the key nor its body: not in a response header, not in any log line.
    for (const id of echoed) expect(id).toMatch(/^req_/);
    const out = p.stdout() + p.stderr();
    expect(out).not.toContain(key.slice('svc_live_'.length, 30));
    expect(out).not.toContain(body.slice(0, 20));
    // The access lines are there, with the key's place redacted.
    const urls = jsonLines(p)
      .filter((l) => l.msg === 'request completed')
      .map((l) => l.url);
    expect(urls).toContain('/api/partner/products/svc_live_[redacted]');
    expect(urls).toContain('/api/partner/products/[redacted]');
  });

  it('a SIGTERM during start-up shuts down (exit 0), not killed by the signal', async () => {
    // A fresh DATA_DIR: PGlite's initdb takes seconds after the server socket listens, and the
    // signal comes in that time.
    const dir = tempDir();
    const p = spawnCli(['start'], {
      DATA_DIR: dir,
      PORT: '0',
      ROLES: 'api',
      ALLOW_EMBEDDED_DATABASE: 'true', // one role alone on the embedded database, on purpose
      CHAINS_FILE: await deadChainsFile(dir),
      SHUTDOWN_TIMEOUT_MS: '60000',
    });
    await waitFor(
      () => (p.stdout().includes('"msg":"Server listening at') ? true : undefined),
      60_000,
      `the server socket (stderr: ${p.stderr()})`,
    );
    expect(p.stdout()).not.toContain('"msg":"database ready"');
    const exit = await stop(p);
    console.log(`[robustness] SIGTERM during start-up: exit ${JSON.stringify(exit)}`);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    const lines = jsonLines(p);
    expect(lines.some((l) => l.msg === 'shutdown complete')).toBe(true);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('a worker whose jobs wait on an RPC node that does not answer stops inside its timeout', async () => {
    // A node that accepts connections and never answers: every chain call of a tick waits for
    // the client's 10 s timeout (and a retry).
    const rpc = await startTcpProxy({ host: '127.0.0.1', port: await deadPort() });
    await rpc.setMode('frozen');
    const dir = await seededDir();
    const chainsFile = path.join(dir, 'chains.json');
    writeFileSync(
      chainsFile,
      JSON.stringify([
        {
          chain_id: 31337,
          name: 'frozen',
          rpc_urls: [`http://127.0.0.1:${rpc.port}`],
          confirmation_depth: 2,
          block_range_limit: 1000,
        },
      ]),
    );
    const p = spawnCli(['start'], {
      DATA_DIR: dir,
      ROLES: 'worker',
      ALLOW_EMBEDDED_DATABASE: 'true', // one role alone on the embedded database, on purpose
      CHAINS_FILE: chainsFile,
      SHUTDOWN_TIMEOUT_MS: '10000',
    });
    try {
      await waitFor(
        () => (p.stdout().includes('"msg":"worker started"') ? true : undefined),
        60_000,
        `the worker (stderr: ${p.stderr()})`,
      );
      // Let the jobs' first ticks reach the node.
      await waitFor(() => (rpc.openCount() > 0 ? true : undefined), 10_000, 'a chain call');
      await new Promise((r) => setTimeout(r, 500));
      const exit = await stop(p);
      console.log(
        `[robustness] worker stop with ticks waiting on a silent RPC node: ${JSON.stringify(exit)}`,
      );
      expect(exit.code).toBe(0);
      expect(exit.ms).toBeLessThan(8_000);
      const lines = jsonLines(p);
      expect(lines.some((l) => l.msg === 'shutdown timed out; exiting with work in flight')).toBe(
        false,
      );
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    } finally {
      if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await rpc.close();
    }
  });

  describe.runIf(postgresAdminUrl() && testRedisUrl())('on PostgreSQL and Redis', () => {
    const databases: TestDatabase[] = [];
    const proxies: TcpProxy[] = [];
    afterAll(async () => {
      for (const x of proxies) await x.close();
      for (const t of databases) await t.drop();
    });

    async function startApi(): Promise<{ p: Spawned; url: string; pg: TcpProxy }> {
      const t = await freshDatabase('postgres');
      databases.push(t);
      await t.db.close();
      const target = new URL(t.location);
      const pg = await startTcpProxy({ host: '127.0.0.1', port: Number(target.port || 5432) });
      proxies.push(pg);
      target.hostname = '127.0.0.1';
      target.port = String(pg.port);
      const dir = tempDir();
      const p = spawnCli(['start'], {
        DATA_DIR: dir,
        PORT: '0',
        ROLES: 'api',
        DATABASE_URL: target.toString(),
        DATABASE_POOL_MAX: '4',
        REDIS_URL: testRedisUrl()!,
        CHAINS_FILE: await deadChainsFile(dir),
        SHUTDOWN_TIMEOUT_MS: '10000',
      });
      return { p, url: await listening(p), pg };
    }

    const traffic = async (url: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await fetch(`${url}/api/partner/products`, {
          headers: { 'x-api-key': `svc_live_${'a'.repeat(43)}` },
        }).catch(() => undefined);
        await res?.arrayBuffer();
      }
    };

    it('a clean stop, with requests and probes in flight, logs nothing at error level and exits well inside its timeout', async () => {
      const { p, url } = await startApi();
      await waitFor(
        async () => ((await fetch(`${url}/ready`)).status === 200 ? true : undefined),
        30_000,
        'ready',
      );
      await traffic(url, 20);
      // Clients that keep asking while the process stops: partner reads and readiness probes.
      let stopping = false;
      const clients = Array.from({ length: 8 }, async (_, i) => {
        while (!stopping) {
          const target = i % 2 ? '/ready' : '/api/partner/products';
          await fetch(`${url}${target}`, { headers: { 'x-api-key': `svc_live_${'a'.repeat(43)}` } })
            .then((r) => r.arrayBuffer())
            .catch(() => {
              stopping = true;
            });
        }
      });
      await new Promise((r) => setTimeout(r, 300));
      const exit = await stop(p);
      stopping = true;
      await Promise.all(clients);
      console.log(`[robustness] clean stop: ${JSON.stringify(exit)}`);
      expect(exit.code).toBe(0);
      expect(exit.ms).toBeLessThan(5_000);
      expect(jsonLines(p).filter((l) => l.level >= 50)).toEqual([]);
      expect(p.stderr()).toBe('');
    });

    it('after a database fault (connections cut, PostgreSQL refused, back) it stops inside its timeout', async () => {
      const { p, url, pg } = await startApi();
      await waitFor(
        async () => ((await fetch(`${url}/ready`)).status === 200 ? true : undefined),
        30_000,
        'ready',
      );
      await traffic(url, 10);
      pg.dropAll();
      await traffic(url, 5);
      await pg.setMode('down');
      await traffic(url, 10);
      await fetch(`${url}/ready`).then((r) => r.arrayBuffer());
      await pg.setMode('up');
      await waitFor(
        async () => ((await fetch(`${url}/ready`)).status === 200 ? true : undefined),
        30_000,
        'ready again',
      );
      await traffic(url, 10);
      const exit = await stop(p);
      console.log(`[robustness] stop after a database fault: ${JSON.stringify(exit)}`);
      expect(exit.code).toBe(0);
      expect(exit.ms).toBeLessThan(5_000);
      const lines = jsonLines(p);
      expect(lines.some((l) => l.msg === 'shutdown timed out; exiting with work in flight')).toBe(
        false,
      );
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    });
    it('with requests stuck on database connections that went silent, it stops inside its timeout', async () => {
      const { p, url, pg } = await startApi();
      await waitFor(
        async () => ((await fetch(`${url}/ready`)).status === 200 ? true : undefined),
        30_000,
        'ready',
      );
      await traffic(url, 5);
      // Every byte to PostgreSQL is swallowed: the pool's connections, and the ones it opens
      // meanwhile, stay dead even after PostgreSQL is reachable again.
      await pg.setMode('silent');
      const stuck = Array.from({ length: 6 }, (_, i) =>
        fetch(`${url}/api/partner/products`, {
          headers: { 'x-api-key': `svc_live_${String(i).repeat(43)}` },
        })
          .then((r) => r.status)
          .catch(() => 0),
      );
      await new Promise((r) => setTimeout(r, 1_000));
      await pg.setMode('up');
      const exit = await stop(p);
      const statuses = await Promise.all(stuck);
      console.log(
        `[robustness] stop with requests stuck on silent database connections: ${JSON.stringify(exit)}; the stuck requests got ${statuses.join(', ')}`,
      );
      // Before: the stuck requests held app.close() and the pool's end() until the 10 s timer
      // killed the process ("exiting with work in flight", exit 1).
      expect(exit.code).toBe(0);
      expect(exit.ms).toBeLessThan(8_000);
      const lines = jsonLines(p);
      expect(lines.some((l) => l.msg === 'shutdown timed out; exiting with work in flight')).toBe(
        false,
      );
      expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    });
  });
});
