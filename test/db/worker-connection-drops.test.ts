/**
 * A worker on PostgreSQL whose connections are dropped for real, at random moments, while every job
 * runs (#14: a worker exited on "Connection terminated unexpectedly … Unhandled 'error' event … on
 * Client instance" during catch-up indexing). The real service runs as a child process in the
 * worker role on the demo's local chain, so catch-up indexing, daily metrics, the lifecycle, the
 * dispatcher and the inbound linker all start at once; the test terminates every backend of that
 * process (pg_terminate_backend, matched by its application_name) at random intervals, recording
 * what each backend was doing. Then: the process never exited, logged no error, every failure
 * was retried, and the work converged (the indexer at the chain's head, gap-free daily snapshots
 * up to yesterday for every deployed product).
 *
 * The worker polls faster than its defaults (chains every 250 ms instead of 2 s, daily metrics every
 * 2 s instead of a minute): the same jobs, with more of them in flight per second, so the drops
 * land sooner and a failed metrics tick is retried within seconds rather than after up to a minute
 * (#13: the suite's slowest file, 50–80 s, mostly waiting for idle workers).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { deadPort } from '../helpers/net.ts';
import { type Spawned, spawnCli, waitFor } from '../helpers/process.ts';

/** Drops of a backend caught mid-work, within the drop phase. */
const DROPS = 60;
const DROP_PHASE_MS = 90_000;

describe.skipIf(!postgresAdminUrl())('a worker whose PostgreSQL connections drop', () => {
  let t: TestDatabase | undefined;
  let p: Spawned | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'pys-drops-'));
  afterAll(async () => {
    if (p && p.child.exitCode === null) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    await t?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never exits, retries every failure and converges', { timeout: 600_000 }, async () => {
    t = await freshDatabase('postgres');
    const appName = `pys-drops-${randomBytes(4).toString('hex')}`;
    const url = new URL(t.location);
    url.searchParams.set('application_name', appName);
    const chainPort = await deadPort();
    p = spawnCli(['start'], {
      ROLES: 'worker',
      DATABASE_URL: url.toString(),
      DATA_DIR: dir,
      DEMO: 'true',
      LOCAL_CHAIN_DAYS: '30',
      LOCAL_CHAIN_PORT: String(chainPort),
      LOG_LEVEL: 'info',
      CHAIN_POLL_INTERVAL_MS: '250',
      DAILY_METRICS_INTERVAL_MS: '2000',
    });
    const spawned = p;
    await waitFor(
      () => (spawned.stdout().includes('"msg":"worker started"') ? true : undefined),
      300_000, // building the local chain takes a while on a loaded machine
      `the worker (stderr: ${spawned.stderr()})`,
    );

    // The dropper, on its own connection: it watches the worker's backends every few ms and
    // terminates one caught mid-work (a statement running, or inside a transaction) with some
    // probability, so the drops land at random points of whatever job is working, until DROPS
    // such drops or DROP_PHASE_MS. Idle pool connections are dropped now and then too.
    const admin = new pg.Client({ connectionString: t.location });
    await admin.connect();
    const hits: string[] = [];
    const deadline = Date.now() + DROP_PHASE_MS;
    try {
      while (hits.length < DROPS && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 2 + Math.random() * 20));
        const { rows } = await admin.query<{ pid: number; state: string | null; query: string }>(
          `SELECT pid, state, left(query, 70) AS query FROM pg_stat_activity
            WHERE application_name = $1`,
          [appName],
        );
        for (const r of rows) {
          const busy = r.state === 'active' || r.state === 'idle in transaction';
          if (Math.random() >= (busy ? 0.35 : 0.01)) continue;
          const { rows: done } = await admin.query<{ ok: boolean }>(
            'SELECT pg_terminate_backend($1) AS ok',
            [r.pid],
          );
          if (busy && done[0]?.ok) hits.push(`${r.state}: ${r.query.replace(/\s+/g, ' ')}`);
        }
        expect(
          spawned.child.exitCode,
          `exited after ${hits.length} drops; stderr: ${spawned.stderr()}; stdout tail: ${spawned.stdout().slice(-3000)}`,
        ).toBeNull();
      }
    } finally {
      await admin.end();
    }
    console.log(
      `drop phase: ${hits.length} drops in ${Date.now() - (deadline - DROP_PHASE_MS)} ms`,
    );
    console.log(`${hits.length} backends terminated mid-work:\n${hits.join('\n')}`);
    expect(hits.length, 'drops that hit work in flight').toBeGreaterThanOrEqual(10);

    // Converges once the drops stop: the indexer reaches the head, metrics cover every day.
    const { db } = t;
    const rpc = `http://127.0.0.1:${chainPort}`;
    const head = async () => {
      const res = await fetch(rpc, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
      });
      return BigInt(((await res.json()) as { result: string }).result);
    };
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await waitFor(
      async () => {
        const cursor = await db.query<{ block_number: string }>(
          'SELECT block_number FROM chain_cursors',
        );
        const indexed =
          cursor.rows[0] && BigInt(cursor.rows[0].block_number) >= (await head()) - 2n;
        const days = await db.query<{ slug: string; n: string; first: string; last: string }>(
          `SELECT p.slug, count(s.date) AS n, min(s.date) AS first, max(s.date) AS last
             FROM products p LEFT JOIN daily_snapshots s ON s.product_id = p.id
            WHERE p.status <> 'pending_deploy' GROUP BY p.slug`,
        );
        const complete =
          days.rows.length > 0 &&
          days.rows.every(
            (r) =>
              r.last !== null &&
              r.last >= yesterday &&
              Number(r.n) === (Date.parse(r.last) - Date.parse(r.first)) / 86_400_000 + 1,
          );
        return indexed && complete ? true : undefined;
      },
      240_000, // a job that failed waits out its backoff (at most 30 s)
      'the indexer at the head and gap-free daily snapshots up to yesterday',
    );

    expect(spawned.child.exitCode).toBeNull();
    const lines = spawned
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    const failed = lines.filter((l) => l.includes('"msg":"job tick failed"'));
    expect(failed.length, 'ticks that failed on a dropped connection').toBeGreaterThan(0);
    expect(
      failed.every((l) => l.includes('"retryable":true')),
      failed.join('\n'),
    ).toBe(true);
    expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    expect(spawned.stderr()).not.toMatch(/Unhandled|uncaught/i);
  });
});
