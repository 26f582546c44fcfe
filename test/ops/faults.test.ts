/**
 * Fault tests of the running system, on PostgreSQL, loopback only, bounded in time. One anvil, one
 * database, one HTTPS receiver; an API process (the real CLI) and worker processes
 * (test/ops/fixtures/worker.ts: the service's worker role with leases shortened to 2 s) reach
 * PostgreSQL, Redis and the RPC node through TCP proxies the test owns, which fail for real.
 *
 * - kill -9 of workers at random points while they index and deliver: no event lost, no attempt
 *   beyond 3, a duplicate only for a delivery that was in flight at a kill (its attempts > 1);
 * - database connections cut at random during every job: no process exits, all resume;
 * - RPC down, then frozen: 503 chain_rpc_unavailable within the 2 s bound; indexing resumes with
 *   no gap and no duplicate;
 * - Redis down: the API keeps serving (budgets counted per process meanwhile), and budgets count
 *   in Redis again once it is back;
 * - Redis silent (a connection that swallows every byte and stays dead after Redis heals): the
 *   API replaces it, enforces a 100-a-minute budget on its own meanwhile, and is ready again
 *   within seconds.
 *
 * The figures (events, kills, lost, duplicates, max attempts) are printed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import type { Database } from '../../src/db/client.ts';
import type { Product } from '../../src/db/products.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { engineWrite, type Fixture, setupFixture, USD, USERS } from '../chain/helpers.ts';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { type HttpsReceiver, startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { type Spawned, spawnCli, waitFor } from '../helpers/process.ts';
import { testRedisUrl } from '../helpers/redis.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { engineProduct, mine } from '../sync/helpers-indexer.ts';

const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url));
const [ALICE, BOB] = USERS as [Address, Address];

interface WorkerProcess {
  child: ChildProcess;
  ready: Promise<unknown>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

/** Deposits made while workers are killed: one event and one delivery each. */
const EVENTS = 100;
const MIN_KILLS = 6;

const enabled = Boolean(postgresAdminUrl() && testRedisUrl());

describe.runIf(enabled)('faults of a running system (PostgreSQL, Redis, RPC, workers)', () => {
  let fx: Fixture;
  let t: TestDatabase;
  let db: Database;
  let product: Product;
  let engine: Address;
  let receiver: HttpsReceiver;
  let pgProxy: TcpProxy;
  let rpcProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let dir: string;
  let env: Record<string, string>;
  let api: Spawned;
  let apiUrl: string;
  let liveKey: string;
  let testKey: string;
  const workers: WorkerProcess[] = [];
  const txHashes: string[] = [];

  function startWorker(): WorkerProcess {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
    });
    child.stderr!.on('data', (d) => {
      out += d;
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.on('exit', (code, signal) => r({ code, signal })),
    );
    const ready = waitFor(
      () => (out.includes('worker ready') ? true : undefined),
      30_000,
      'worker',
    );
    ready.catch(() => {}); // a worker killed while it starts never gets ready
    const w = { child, ready, exited, output: () => out };
    workers.push(w);
    return w;
  }
  const live = () =>
    workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);

  async function deposit(n: number, pauseMs = 0) {
    for (let i = 0; i < n; i++) {
      if (pauseMs) await new Promise((r) => setTimeout(r, Math.random() * pauseMs));
      const user = txHashes.length % 2 ? BOB : ALICE;
      const { receipt } = await engineWrite(fx, engine, user, { fn: 'deposit', args: [USD, user] });
      txHashes.push(receipt.transactionHash);
    }
  }

  async function storedTxHashes(): Promise<string[]> {
    const { rows } = await db.query<{ tx_hash: string }>(
      `SELECT tx_hash FROM events WHERE event_type = 'deposit.confirmed' ORDER BY block_number, log_index`,
    );
    return rows.map((r) => r.tx_hash);
  }

  /**
   * Mines past the confirmation depth and waits until every deposit is stored and delivered. A
   * bound on convergence, not a speed test: alone it settles in seconds; in CI, beside a Chromium
   * suite on the same two cores, it took over 40 s.
   */
  async function settle(what: string, timeoutMs = 100_000) {
    await mine(fx, 3);
    await waitFor(
      async () => {
        const stored = await storedTxHashes();
        if (stored.length < txHashes.length) return undefined;
        const { rows } = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`,
        );
        return rows[0]!.n === '0' ? true : undefined;
      },
      timeoutMs,
      what,
    );
  }

  beforeAll(async () => {
    fx = await setupFixture();
    t = await freshDatabase('postgres');
    db = t.db;
    ({ engine, product } = await engineProduct(fx, db, 'sync'));
    dir = mkdtempSync(path.join(tmpdir(), 'pys-faults-'));
    const caFile = path.join(dir, 'ca.pem');
    writeFileSync(caFile, testCaPem());
    const masterKey = randomBytes(32);
    receiver = await startHttpsReceiver({
      handler: () => ({ status: 200, delayMs: Math.floor(Math.random() * 30) }),
    });
    await createWebhookDestinationsRepo(db, createSecretBox(masterKey)).add({
      partnerId: product.partnerId,
      environment: 'live',
      url: receiver.url,
    });
    const keys = createApiKeysRepo(db);
    liveKey = (await keys.create(product.partnerId, 'live')).key;
    testKey = (await keys.create(product.partnerId, 'test')).key;

    const pg = new URL(t.location);
    pgProxy = await startTcpProxy({ host: '127.0.0.1', port: Number(pg.port || 5432) });
    const rpc = new URL(fx.anvil.rpcUrl);
    rpcProxy = await startTcpProxy({ host: '127.0.0.1', port: Number(rpc.port) });
    const redis = new URL(testRedisUrl()!);
    redisProxy = await startTcpProxy({ host: '127.0.0.1', port: Number(redis.port || 6379) });
    pg.hostname = '127.0.0.1';
    pg.port = String(pgProxy.port);
    const chainsFile = path.join(dir, 'chains.json');
    writeFileSync(
      chainsFile,
      JSON.stringify([
        {
          chain_id: fx.anvil.chainId,
          name: 'faults',
          rpc_urls: [`http://127.0.0.1:${rpcProxy.port}`],
          confirmation_depth: 2,
          block_range_limit: 10_000,
        },
      ]),
    );
    env = {
      DATABASE_URL: pg.toString(),
      DATABASE_POOL_MAX: '4',
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      DATA_DIR: dir,
      CHAINS_FILE: chainsFile,
      MASTER_KEY: masterKey.toString('hex'),
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
      WEBHOOK_CA_FILE: caFile,
    };
    api = spawnCli(['start'], { ...env, ROLES: 'api', PORT: '0', LOG_LEVEL: 'warn' });
    apiUrl = await waitFor(
      () => /listening on (http:\/\/\S+)/.exec(api.stdout())?.[1],
      60_000,
      `the API (stderr: ${api.stderr()})`,
    );
  }, 120_000);

  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    if (api && api.child.exitCode === null) {
      api.child.kill('SIGKILL');
      await api.exited;
    }
    await Promise.all([
      pgProxy?.close(),
      rpcProxy?.close(),
      redisProxy?.close(),
      receiver?.close(),
    ]);
    await t?.drop();
    await fx?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('kill -9 of workers at random points while they index and deliver: nothing lost, attempts ≤ 3, duplicates only in flight', async () => {
    await Promise.all([startWorker().ready, startWorker().ready]);
    let kills = 0;
    let producing = true;
    const producer = deposit(EVENTS, 80).finally(() => {
      producing = false;
    });
    const killer = (async () => {
      // While deposits are made, and at least MIN_KILLS times (a fast machine makes them quickly).
      while (producing || kills < MIN_KILLS) {
        await new Promise((r) => setTimeout(r, 250 + Math.random() * 900));
        const running = live();
        if (running.length === 0) break;
        const victim = running[Math.floor(Math.random() * running.length)]!;
        victim.child.kill('SIGKILL');
        await victim.exited;
        kills++;
        startWorker(); // not awaited: a worker may be killed again while it starts
      }
    })();
    await Promise.all([producer, killer]);
    await settle('every event stored and delivered after the kills');

    const stored = await storedTxHashes();
    const events = (
      await db.query<{ id: string }>(`SELECT id FROM events WHERE event_type = 'deposit.confirmed'`)
    ).rows.map((r) => r.id);
    const deliveries = (
      await db.query<{ event_id: string; status: string; attempts: number }>(
        'SELECT event_id, status, attempts FROM webhook_deliveries',
      )
    ).rows;
    const received = new Map<string, number>();
    for (const r of receiver.requests) {
      const id = String(r.headers['x-service-event-id']);
      received.set(id, (received.get(id) ?? 0) + 1);
    }
    const lost = events.filter((id) => !received.has(id));
    const duplicated = [...received].filter(([, n]) => n > 1);
    const duplicates = duplicated.reduce((sum, [, n]) => sum + n - 1, 0);
    const maxAttempts = Math.max(...deliveries.map((d) => d.attempts));
    const attemptsOf = new Map(deliveries.map((d) => [d.event_id, d.attempts]));
    console.log(
      `[faults] kill -9: events=${events.length} deliveries=${receiver.requests.length} kills=${kills} lost=${lost.length} duplicates=${duplicates} max_attempts=${maxAttempts}`,
    );

    expect(kills).toBeGreaterThanOrEqual(MIN_KILLS);
    // The indexer: every deposit stored once, in chain order.
    expect(stored).toEqual(txHashes);
    expect(events).toHaveLength(EVENTS);
    // The dispatcher: every event delivered, none beyond three attempts.
    expect(deliveries).toHaveLength(EVENTS);
    // A delivery whose three attempts were all cut by kills after sending ends `failed`, yet
    // reached the receiver; one never received is lost.
    expect(lost).toEqual([]);
    for (const d of deliveries) {
      if (d.status !== 'delivered')
        expect({ ...d, received: received.has(d.event_id) }).toEqual({
          ...d,
          status: 'failed',
          attempts: 3,
          received: true,
        });
    }
    expect(maxAttempts).toBeLessThanOrEqual(3);
    // A duplicate is an attempt a killed worker had sent, taken over after its lease.
    for (const [id] of duplicated) expect(attemptsOf.get(id)).toBeGreaterThan(1);
  }, 200_000);

  it('database connections cut at random during every job: no process exits, all resume', async () => {
    while (live().length < 2) await startWorker().ready;
    await Promise.all(live().map((w) => w.ready));
    const before = receiver.requests.length;
    const statuses: number[] = [];
    let chaos = true;
    let drops = 0;
    const chaosLoop = (async () => {
      let n = 0;
      while (chaos) {
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 250));
        // Mostly one connection at random; every few rounds all of them at once, so every job
        // (lifecycle, indexer, processor, dispatcher, linker) and the API lose theirs mid-query.
        if (++n % 6 === 0) drops += pgProxy.dropAll();
        else if (pgProxy.dropRandom()) drops++;
      }
    })();
    const reads = (async () => {
      while (chaos) {
        const res = await fetch(`${apiUrl}/api/partner/products`, {
          headers: { 'x-api-key': liveKey },
        }).catch(() => undefined);
        statuses.push(res?.status ?? 0);
        await res?.arrayBuffer().catch(() => {});
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const running = live();
    await deposit(30);
    await new Promise((r) => setTimeout(r, 3_000));
    chaos = false;
    await Promise.all([chaosLoop, reads]);

    // Nobody exited.
    expect(running.every((w) => w.child.exitCode === null && w.child.signalCode === null)).toBe(
      true,
    );
    expect(api.child.exitCode).toBeNull();
    // All resume: the deposits made during the cuts are stored and delivered, the API answers.
    await settle('everything stored and delivered after the cuts');
    expect(await storedTxHashes()).toEqual(txHashes);
    const after = await fetch(`${apiUrl}/api/partner/products`, {
      headers: { 'x-api-key': liveKey },
    });
    expect(after.status).toBe(200);
    const cutDeliveries = (
      await db.query<{ status: string; attempts: number }>(
        'SELECT d.status, d.attempts FROM webhook_deliveries d JOIN events e ON e.id = d.event_id ORDER BY e.seq DESC LIMIT 30',
      )
    ).rows;
    expect(cutDeliveries.every((d) => d.status === 'delivered')).toBe(true);
    const cutMaxAttempts = Math.max(...cutDeliveries.map((d) => d.attempts));
    expect(cutMaxAttempts).toBeLessThanOrEqual(3);
    console.log(
      `[faults] database cuts: max_attempts=${cutMaxAttempts} connections_cut=${drops} api_requests=${statuses.length} api_non_200=${statuses.filter((s) => s !== 200).length} deliveries=${receiver.requests.length - before}`,
    );
    expect(drops).toBeGreaterThan(5);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
  }, 160_000);

  it('RPC down, then frozen: 503 chain_rpc_unavailable within 2 s, and indexing resumes with no gap or duplicate', async () => {
    let wallet = 0x5000;
    const position = async () => {
      const address = `0x${(++wallet).toString(16).padStart(40, '0')}`;
      const started = Date.now();
      const res = await fetch(
        `${apiUrl}/api/partner/products/${product.slug}/position?address=${address}`,
        { headers: { 'x-api-key': liveKey } },
      );
      const body = (await res.json()) as { code?: string };
      return { status: res.status, code: body.code, ms: Date.now() - started, address };
    };
    /** The API's own response time for the position request of `address` with `status`. */
    const accessLogMs = (address: string, status: number): number | undefined => {
      for (const line of api.stdout().split('\n')) {
        if (!line.includes(address) || !line.includes('"responseTimeMs"')) continue;
        const entry = JSON.parse(line) as { statusCode?: number; responseTimeMs?: number };
        if (entry.statusCode === status) return entry.responseTimeMs;
      }
      return undefined;
    };
    expect((await position()).status).toBe(200);

    const timings: number[] = [];
    for (const mode of ['down', 'frozen'] as const) {
      await rpcProxy.setMode(mode);
      // The chain moves on while the node cannot be reached (the test reaches it directly).
      await deposit(5);
      for (let i = 0; i < 2; i++) {
        const r = await position();
        expect(r).toMatchObject({ status: 503, code: 'chain_rpc_unavailable' });
        // The bound is the server's: from the request's arrival to its answer, as its access log
        // records it (Fastify's elapsed time). The client's own clock also counts this test
        // process's scheduling on a loaded CI machine, so it only gets a sanity bound.
        const served = await waitFor(() => accessLogMs(r.address, 503), 5_000, 'access log line');
        expect(served).toBeLessThan(2_000);
        expect(r.ms).toBeLessThan(2_000 + 1_500);
        timings.push(served);
      }
    }
    await rpcProxy.setMode('up');
    await settle('indexing resumed after the RPC outage');
    const stored = await storedTxHashes();
    expect(stored).toEqual(txHashes);
    expect(new Set(stored).size).toBe(stored.length);
    expect((await position()).status).toBe(200);
    console.log(
      `[faults] rpc outage: 503 served in ${timings.join(', ')} ms (server time); events=${stored.length}`,
    );
  }, 160_000);

  it('Redis down: the API keeps serving (budgets per process); budgets count in Redis again once it is back', async () => {
    const products = (key: string) =>
      fetch(`${apiUrl}/api/partner/products`, { headers: { 'x-api-key': key } }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });
    await redisProxy.setMode('down');
    const during: number[] = [];
    const startedOutage = Date.now();
    for (let i = 0; i < 10; i++) during.push(await products(liveKey));
    const outageMs = Date.now() - startedOutage;
    expect(during).toEqual(Array(10).fill(200));
    // The embed's per-address window is counted per process too.
    expect((await fetch(`${apiUrl}/embed/host.js`)).status).toBe(200);
    // Readiness says so meanwhile (it checks Redis), and recovers with it.
    expect((await fetch(`${apiUrl}/ready`)).status).toBe(503);
    await redisProxy.setMode('up');
    const backAt = Date.now();
    await waitFor(
      async () => ((await fetch(`${apiUrl}/ready`)).status === 200 ? true : undefined),
      15_000,
      'ready again',
    );
    const reconnectMs = Date.now() - backAt;
    // Budgets resume: the test environment's 100 a minute is enforced again through Redis.
    let refusedAt: number | undefined;
    await waitFor(
      async () => {
        for (let i = 1; i <= 250; i++) {
          if ((await products(testKey)) === 429) {
            refusedAt = i;
            return true;
          }
        }
        return undefined;
      },
      30_000,
      'a 429 once Redis is back',
    );
    console.log(
      `[faults] redis outage: served ${during.filter((x) => x === 200).length}/10 in ${outageMs} ms; ready again ${reconnectMs} ms after; 429 at request ${refusedAt} (budget 100)`,
    );
    expect(refusedAt).toBe(101);
    expect(api.child.exitCode).toBeNull();
  }, 60_000);
  it('Redis silent: the connection is replaced, a 100/min budget holds meanwhile, ready again within seconds', async () => {
    // A key of its own: its whole budget is counted during the silence.
    const key = (await createApiKeysRepo(db).create(product.partnerId, 'test')).key;
    const products = () =>
      fetch(`${apiUrl}/api/partner/products`, { headers: { 'x-api-key': key } }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });
    await waitFor(
      async () => ((await fetch(`${apiUrl}/ready`)).status === 200 ? true : undefined),
      15_000,
      'ready',
    );
    const logFrom = api.stdout().length;
    await redisProxy.setMode('silent');
    const started = Date.now();
    const during: number[] = [];
    for (let i = 0; i < 120; i++) during.push(await products());
    const silentMs = Date.now() - started;
    const passed = during.filter((x) => x === 200).length;
    expect((await fetch(`${apiUrl}/ready`)).status).toBe(503);
    await redisProxy.setMode('up');
    const healedAt = Date.now();
    await waitFor(
      async () => ((await fetch(`${apiUrl}/ready`)).status === 200 ? true : undefined),
      15_000,
      'ready again',
    );
    const readyMs = Date.now() - healedAt;
    console.log(
      `[faults] redis silent: ${passed}/120 passed on a 100/min key (first 429 at ${during.indexOf(429) + 1}) in ${silentMs} ms; ready again ${readyMs} ms after Redis healed`,
    );
    // Before: 120 of 120 passed, a second each, and /ready stayed 503 for as long as the
    // connection lived.
    expect(passed).toBe(100);
    expect(during.slice(100)).toEqual(Array(20).fill(429));
    expect(silentMs).toBeLessThan(20_000);
    expect(readyMs).toBeLessThan(5_000);
    const errors = api
      .stdout()
      .slice(logFrom)
      .split('\n')
      .filter((l) => /"level":(50|60)/.test(l));
    expect(errors).toEqual([]);
    expect(api.child.exitCode).toBeNull();
  }, 90_000);
});
