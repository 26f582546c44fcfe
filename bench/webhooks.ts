/**
 * `npm run bench:webhooks`: outbound delivery and the inbound endpoint, on PGlite and, when
 * TEST_DATABASE_URL (or DATABASE_URL) names a server, on PostgreSQL.
 *
 * Outbound: the service's dispatcher and sender (this process) deliver to a local HTTPS receiver
 * (its own process, test CA trusted, loopback allow-listed), three times in the same run — signing
 * with X-Service-Signature only (the baseline), with both schemes (the default), and with both
 * during a rotation's grace period — each in two phases of 10,000 events:
 *  - burst: 10,000 events committed in one transaction; deliveries/s = 10,000 / (last receipt −
 *    commit);
 *  - paced: 10,000 events committed in small transactions at a third (PostgreSQL) or a fifth
 *    (PGlite) of the bare sender's burst rate; p50/p99 of the time from each event's commit to its
 *    receipt (a latency under a load the target names, not a queue draining).
 * Beside them, in the same run, the bare sender (bareOutbound: the same sender, bodies, signatures
 * and receiver with no queue), before and after, averaged; the ratio is of the default signing.
 * Inbound: the service (ROLES=api, its own process) takes valid signed `ping` events with unique
 * Idempotency-Keys from autocannon (50 connections, 10 s, rotating through enough live keys that
 * the per-key budget is not what is measured); req/s and latency, beside a bare route that verifies
 * the same HMAC (bench/bare-inbound.ts) under the same load, before and after; and the CPU each
 * answer cost the service, the database server and the whole machine, beside the bare route's.
 * It measures and prints; it fails only when something answers errors or an event is lost.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import pino from 'pino';
import { serviceNodeFlags } from '../scripts/node-flags.ts';
import { createApiKeysRepo } from '../src/db/api-keys.ts';
import { createDatabase, type Database } from '../src/db/client.ts';
import { createInboundSecretsRepo } from '../src/db/inbound-secrets.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPartnersRepo } from '../src/db/partners.ts';
import { createWebhookDestinationsRepo } from '../src/db/webhook-destinations.ts';
import { createAddressPolicy, parseCidrList } from '../src/webhooks/address-policy.ts';
import { createDispatcher } from '../src/webhooks/dispatcher.ts';
import { createSecretBox, generateDestinationSecret } from '../src/webhooks/secret-box.ts';
import { createSender } from '../src/webhooks/sender.ts';
import { type SigningSecret, signDelivery, signingSecret } from '../src/webhooks/signature.ts';
import { commandCpuSeconds, processCpuSeconds, startCpuMeter } from './cpu-meter.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/yield-service.mjs');
const EVENTS = 10_000;
/** Paced load, as a share of the bare sender's burst rate measured in the same run. */
const PACED_SHARE: Record<Engine, number> = { postgres: 1 / 3, pglite: 1 / 5 };
const INBOUND_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Requests sent before each inbound measurement (JIT, pools, caches). */
const INBOUND_WARMUP = 30_000;
// Live keys allow 1,000 requests a minute each: enough keys that the warm-up and the measured
// seconds stay under budget at 40,000 req/s (with 100 keys, group commit's rate ran past it and a
// quarter of the answers were 429s).
const INBOUND_KEYS = Math.ceil(((INBOUND_SECONDS + 2) * 40_000) / 1000);

type Engine = 'pglite' | 'postgres';

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

async function freshDatabase(
  engine: Engine,
  dir: string,
): Promise<{ db: Database; url?: string; drop: () => Promise<void> }> {
  if (engine === 'pglite') {
    const db = await createDatabase({ engine: 'pglite', dataDir: path.join(dir, 'pglite') });
    await migrate(db);
    return { db, drop: () => db.close() };
  }
  const admin = (process.env.TEST_DATABASE_URL || process.env.DATABASE_URL) as string;
  const name = `pys_bench_${randomBytes(4).toString('hex')}`;
  const adminClient = new pg.Client({ connectionString: admin });
  await adminClient.connect();
  await adminClient.query(`CREATE DATABASE ${name}`);
  await adminClient.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const db = await createDatabase({ engine: 'postgres', url: url.toString(), poolMax: 10 });
  await migrate(db);
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close();
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** The receiver process and a request/response helper over its IPC channel. */
async function startReceiver() {
  const child = fork(path.join(ROOT, 'bench/webhook-receiver.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T>(type: string) =>
    new Promise<T>((resolve) => {
      const on = (m: { type: string } & T) => {
        if (m.type === type) {
          child.off('message', on);
          resolve(m);
        }
      };
      child.on('message', on);
      child.send({ type });
    });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m: { port: number }) => resolve(m.port)),
  );
  return {
    url: `https://localhost:${port}/hooks`,
    count: () => ask<{ count: number }>('count').then((m) => m.count),
    receipts: () => ask<{ receipts: Array<[number, number]> }>('receipts').then((m) => m.receipts),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.send({ type: 'exit' });
      }),
  };
}

/** Events n = from … from+count−1, one statement (one transaction); returns the commit time. */
async function insertEvents(
  db: Database,
  partnerId: string,
  from: number,
  count: number,
): Promise<number> {
  await db.query(
    `INSERT INTO events (id, partner_id, environment, event_type, dedupe_key, payload, occurred_at)
     SELECT 'evt_bench_' || n, $1, 'live', 'deposit.confirmed', 'deposit.confirmed:bench:' || n,
            '{"n":' || n || ',"slug":"usdc-core","chain_id":31337,"tx_hash":"0x' || md5(n::text) || md5(n::text)
            || '","block_number":' || (1000 + n) || ',"log_index":0,"user_address":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8","amount":"1250.5","shares":"1250.500000000000","asset_symbol":"USDC","occurred_at":"2026-11-22T00:00:00Z"}',
            now()
     FROM generate_series($2::int, $3::int) AS n`,
    [partnerId, from, from + count - 1],
  );
  return Date.now();
}

async function waitForCount(
  receiver: Awaited<ReturnType<typeof startReceiver>>,
  target: number,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await receiver.count();
    if (n >= target) return;
    if (Date.now() > deadline) throw new Error(`only ${n} of ${target} deliveries arrived`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The payload of bench event n, as insertEvents writes it. */
function benchPayload(n: number): string {
  const h = createHash('md5').update(String(n)).digest('hex');
  return `{"n":${n},"slug":"usdc-core","chain_id":31337,"tx_hash":"0x${h}${h}","block_number":${1000 + n},"log_index":0,"user_address":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8","amount":"1250.5","shares":"1250.500000000000","asset_symbol":"USDC","occurred_at":"2026-11-22T00:00:00Z"}`;
}

/**
 * The outbound baseline (issue #33 item 6): the same sender (same agent, connections and TLS), the
 * same bodies signed with both schemes, POSTed to the same receiver with the dispatcher's
 * concurrency, and no queue: no database, no claim, no attempt counted, no outcome recorded.
 * Deliveries/s of a burst of EVENTS, measured like the dispatcher's (last receipt − start).
 */
async function bareOutbound(): Promise<{ burstRate: number }> {
  const receiver = await startReceiver();
  const sender = createSender({
    policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
    extraCa: readFileSync(path.join(ROOT, 'test/fixtures/tls/ca.pem')),
  });
  const secret = signingSecret(generateDestinationSecret());
  const concurrency = 128; // the dispatcher's default
  try {
    const started = Date.now();
    let next = 0;
    let failures = 0;
    const worker = async () => {
      for (let n = next++; n < EVENTS; n = next++) {
        const body = benchPayload(n);
        const id = `evt_bare_${n}`;
        const timestamp = Math.floor(Date.now() / 1000);
        const signed = signDelivery([secret], id, timestamp, body, true);
        const result = await sender.send({
          url: receiver.url,
          eventType: 'deposit.confirmed',
          body,
          signature: signed.serviceSignature,
          eventId: id,
          webhookTimestamp: timestamp,
          webhookSignature: signed.webhookSignature,
        });
        if (!result.ok) failures++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await waitForCount(receiver, EVENTS, 300_000);
    const receipts = await receiver.receipts();
    const last = Math.max(...receipts.map(([, at]) => at));
    if (failures > 0) throw new Error(`bare sender: ${failures} sends failed`);
    return { burstRate: EVENTS / ((last - started) / 1000) };
  } finally {
    await sender.close();
    await receiver.stop();
  }
}

/**
 * How deliveries are signed: `service` only (X-Service-Signature, what signing cost before #15: the
 * baseline), `both` schemes (X-Service-Signature and Standard Webhooks' webhook-signature, the
 * default), and `rotation`: both schemes during a rotation's grace period (two webhook-signature
 * entries, three HMACs per attempt).
 */
type Signing = 'service' | 'both' | 'rotation';

async function outbound(engine: Engine, signing: Signing, pacedRate: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'pys-bench-webhooks-'));
  const { db, drop } = await freshDatabase(engine, dir);
  const receiver = await startReceiver();
  const box = createSecretBox(randomBytes(32));
  const partner = await createPartnersRepo(db).create('Bench');
  const destinations = createWebhookDestinationsRepo(db, box);
  const { destination } = await destinations.add({
    partnerId: partner.id,
    environment: 'live',
    url: receiver.url,
  });
  if (signing === 'rotation') await destinations.rotate(destination.id, { graceMs: 3_600_000 });
  const sender = createSender({
    policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
    extraCa: readFileSync(path.join(ROOT, 'test/fixtures/tls/ca.pem')),
  });
  const job = createDispatcher({
    db,
    logger: pino({ level: 'silent' }),
    sender,
    secretBox: box,
    standardSignatures: signing !== 'service',
  }).job();
  job.start();
  try {
    // Burst.
    const committed = await insertEvents(db, partner.id, 0, EVENTS);
    await waitForCount(receiver, EVENTS, 300_000);
    const burst = await receiver.receipts();
    const last = Math.max(...burst.map(([, at]) => at));
    const burstRate = EVENTS / ((last - committed) / 1000);

    // Paced: batches every 10 ms, sized to the rate.
    const commits = new Map<number, number>();
    const perBatch = Math.max(1, Math.round(pacedRate / 100));
    const started = Date.now();
    for (let sent = 0; sent < EVENTS; sent += perBatch) {
      const due = started + (sent / pacedRate) * 1000;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const count = Math.min(perBatch, EVENTS - sent);
      const at = await insertEvents(db, partner.id, EVENTS + sent, count);
      for (let i = 0; i < count; i++) commits.set(EVENTS + sent + i, at);
    }
    const offered = EVENTS / ((Date.now() - started) / 1000);
    await waitForCount(receiver, EVENTS, 300_000);
    const paced = await receiver.receipts();
    const latencies = paced
      .map(([n, at]) => at - (commits.get(n) ?? Number.NaN))
      .sort((a, b) => a - b);
    const pacedLast = Math.max(...paced.map(([, at]) => at));
    // Receipt comes before the dispatcher records the outcome: give the last batch time to land.
    const deadline = Date.now() + 10_000;
    let rows: Array<{ status: string; n: string }> = [];
    do {
      await new Promise((r) => setTimeout(r, 100));
      ({ rows } = await db.query<{ status: string; n: string }>(
        'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status',
      ));
    } while (rows.some((r) => r.status === 'pending') && Date.now() < deadline);
    return {
      engine,
      signing,
      burstRate,
      burstSeconds: (last - committed) / 1000,
      offered,
      pacedRate: EVENTS / ((pacedLast - started) / 1000),
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      statuses: Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])),
      received: burst.length + paced.length,
    };
  } finally {
    await job.stop();
    await sender.close();
    await receiver.stop();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function startService(
  engine: Engine,
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; url: string }> {
  // X_PROF=1: CPU profiles of the service into /tmp/prof (read with a profile viewer).
  // The service's own Node flags on this engine (scripts/node-flags.ts), as it runs there.
  const flags = [
    ...serviceNodeFlags(engine),
    // BENCH_NODE_FLAGS: more Node/V8 flags for the service, to try one (space-separated), as in bench:api.
    ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    ...(process.env.X_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []),
  ];
  const child = spawn(process.execPath, [...flags, BIN, 'start'], {
    env: { ...process.env, ...env },
    stdio: 'pipe',
  });
  let out = '';
  child.stderr?.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      out += d;
      const m = /listening on (http:\S+)/.exec(out);
      if (m?.[1]) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`service exited ${code}:\n${out.slice(-2000)}`)));
  });
}

/** The inbound baseline: bench/bare-inbound.ts in its own process, verifying `secret`. */
function startBareInbound(secret: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'bench/bare-inbound.ts')],
    {
      env: { ...process.env, BARE_SECRET: secret },
      stdio: 'pipe',
    },
  );
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      out += d;
      const m = /listening (http:\S+)/.exec(out);
      if (m?.[1]) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`bare inbound exited ${code}: ${out}`)));
  });
}

async function inbound(engine: Engine) {
  const dir = mkdtempSync(path.join(tmpdir(), 'pys-bench-inbound-'));
  const masterKey = randomBytes(32);
  const box = createSecretBox(masterKey);
  const { db, url, drop } = await freshDatabase(engine, dir);
  const partner = await createPartnersRepo(db).create('Bench');
  const keysRepo = createApiKeysRepo(db);
  const keys: string[] = [];
  for (let i = 0; i < INBOUND_KEYS; i++) keys.push((await keysRepo.create(partner.id, 'live')).key);
  const { secret } = await createInboundSecretsRepo(db, box).set(partner.id, 'live');
  if (engine === 'pglite') await db.close(); // the service opens the directory itself
  const service = await startService(engine, {
    ROLES: 'api',
    DEMO: 'false',
    PORT: '0',
    DATA_DIR: dir,
    LOCAL_CHAIN_PORT: '0',
    LOCAL_CHAIN_DAYS: '2',
    LOG_LEVEL: 'warn',
    MASTER_KEY: masterKey.toString('hex'),
    // PGlite: the api role alone on purpose, which `start` otherwise refuses (src/main.ts).
    ...(url ? { DATABASE_URL: url } : { DATABASE_URL: '', ALLOW_EMBEDDED_DATABASE: 'true' }),
  });
  const body = JSON.stringify({ occurred_at: '2026-11-22T00:00:00Z', data: { source: 'bench' } });
  const signature = createHmac('sha256', secret).update(body).digest('hex');
  const bare = await startBareInbound(secret);
  let i = 0;
  const run = randomBytes(3).toString('hex');
  // `span`: seconds, or `{ amount }` requests (the warm-ups).
  const request = (span: number | { amount: number }, target = service.url) =>
    autocannon({
      url: target,
      connections: 50,
      ...(typeof span === 'number' ? { duration: span } : span),
      requests: [
        {
          method: 'POST',
          path: '/api/partner/webhooks/inbound',
          body,
          setupRequest: (req) => {
            i++;
            return {
              ...req,
              headers: {
                'content-type': 'application/json',
                'x-api-key': keys[i % keys.length] as string,
                'idempotency-key': `bench-${run}-${i}`,
                'x-service-event': 'ping',
                'x-service-signature': signature,
              },
            };
          },
        },
      ],
    });
  try {
    // Bare, service, bare: a load that drifts during the run weighs on both the same.
    // Warm-ups by count, not time: the optimising compiler was still busy for the first seconds
    // of the service's run after a 2 s warm-up (a tenth of its CPU), which no steady state pays.
    await request({ amount: INBOUND_WARMUP }, bare.url);
    const bareBefore = await request(INBOUND_SECONDS, bare.url);
    await request({ amount: INBOUND_WARMUP });
    // Where each answer's CPU goes: the service process, the database server's processes (none on
    // PGlite, which runs inside the service) and the whole machine (the load generator included).
    const machine = startCpuMeter();
    const service0 = processCpuSeconds(service.child.pid!);
    const db0 = commandCpuSeconds('postgres');
    const result = await request(INBOUND_SECONDS);
    const spent = machine();
    const perAnswer = (seconds: number) => (seconds * 1e6) / Math.max(1, result.requests.total);
    const cpu = {
      service: perAnswer(processCpuSeconds(service.child.pid!) - service0),
      database: perAnswer(commandCpuSeconds('postgres') - db0),
      machine: spent.machine === null ? Number.NaN : perAnswer(spent.machine),
    };
    const bareMachine = startCpuMeter();
    const bare0 = processCpuSeconds(bare.child.pid!);
    const bareAfter = await request(INBOUND_SECONDS, bare.url);
    const bareSpent = bareMachine();
    const barePerAnswer = (seconds: number) =>
      (seconds * 1e6) / Math.max(1, bareAfter.requests.total);
    const bareCpu = {
      route: barePerAnswer(processCpuSeconds(bare.child.pid!) - bare0),
      machine: bareSpent.machine === null ? Number.NaN : barePerAnswer(bareSpent.machine),
    };
    return {
      engine,
      bareRps: (bareBefore.requests.average + bareAfter.requests.average) / 2,
      bareNon2xx: bareBefore.non2xx + bareAfter.non2xx,
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      total: result.requests.total,
      cpu,
      bareCpu,
    };
  } finally {
    const exited = new Promise((r) => service.child.once('exit', r));
    service.child.kill('SIGTERM');
    await exited;
    bare.child.kill('SIGTERM');
    if (engine === 'postgres') await drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const engines: Engine[] = process.env.BENCH_ENGINES
  ? (process.env.BENCH_ENGINES.split(',') as Engine[])
  : process.env.TEST_DATABASE_URL || process.env.DATABASE_URL
    ? ['postgres', 'pglite']
    : ['pglite'];
const SIGNINGS: Signing[] = ['service', 'both', 'rotation'];

/** CPU cost of signing one delivery, per signing, in this process (no I/O: what signing adds). */
function signingCost(): Record<Signing, number> {
  const body = JSON.stringify({
    slug: 'usdc-core',
    chain_id: 31337,
    tx_hash: `0x${'ab'.repeat(32)}`,
    block_number: 1000,
    log_index: 0,
    user_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    amount: '1250.5',
    shares: '1250.500000000000',
    asset_symbol: 'USDC',
    occurred_at: '2026-11-22T00:00:00Z',
  });
  const current = signingSecret(generateDestinationSecret());
  const previous = signingSecret(generateDestinationSecret());
  const n = 100_000;
  const time = (secrets: [SigningSecret, ...SigningSecret[]], standard: boolean) => {
    const started = performance.now();
    for (let i = 0; i < n; i++)
      signDelivery(secrets, `evt_${i}`, 1_760_000_000 + i, body, standard);
    return ((performance.now() - started) * 1000) / n;
  };
  time([current], true); // warm-up
  return {
    service: time([current], false),
    both: time([current], true),
    rotation: time([current, previous], true),
  };
}
let failed = false;
// BENCH_ONLY=outbound or inbound runs one half.
const only = process.env.BENCH_ONLY;
if (only !== 'inbound') {
  const cost = signingCost();
  console.log(
    `signing one delivery (CPU, this process): service-only ${cost.service.toFixed(2)} µs, both schemes ${cost.both.toFixed(2)} µs, both during a rotation ${cost.rotation.toFixed(2)} µs`,
  );
}
for (const engine of engines) {
  if (only !== 'inbound') {
    // The same run measures the baseline (service signature only) and the two-scheme signing, so
    // that the comparison is not between two machines' loads.
    // In the order A B C B A, averaged per signing, so that a load that drifts during the run
    // (a shared machine) weighs on each the same.
    const results = new Map<Signing, Array<Awaited<ReturnType<typeof outbound>>>>();
    // The bare sender before and after the dispatcher's runs (drift weighs on both the same).
    const bareBefore = await bareOutbound();
    console.log(
      `outbound bare sender (before): burst ${bareBefore.burstRate.toFixed(0)} deliveries/s`,
    );
    const pacedRate = Math.round(bareBefore.burstRate * PACED_SHARE[engine]);
    for (const signing of ['service', 'both', 'rotation', 'both', 'service'] as const) {
      const o = await outbound(engine, signing, pacedRate);
      results.set(signing, [...(results.get(signing) ?? []), o]);
      console.log(
        `outbound ${engine} [${signing}]: burst ${o.burstRate.toFixed(0)} deliveries/s (${EVENTS} in ${o.burstSeconds.toFixed(2)} s); ` +
          `paced at ${o.offered.toFixed(0)} events/s: ${o.pacedRate.toFixed(0)} deliveries/s, commit→receipt p50 ${o.p50} ms, p99 ${o.p99} ms; ` +
          `rows ${JSON.stringify(o.statuses)}, received ${o.received}`,
      );
      if (o.received !== 2 * EVENTS || o.statuses.delivered !== 2 * EVENTS) failed = true;
    }
    const mean = (signing: Signing, f: (o: Awaited<ReturnType<typeof outbound>>) => number) => {
      const runs = results.get(signing) ?? [];
      return runs.reduce((sum, o) => sum + f(o), 0) / runs.length;
    };
    const bareAfter = await bareOutbound();
    console.log(
      `outbound bare sender (after): burst ${bareAfter.burstRate.toFixed(0)} deliveries/s`,
    );
    const bareRate = (bareBefore.burstRate + bareAfter.burstRate) / 2;
    const defaultRate = mean('both', (o) => o.burstRate);
    const defaultP99 = mean('both', (o) => o.p99);
    const share = PACED_SHARE[engine] === 1 / 3 ? 'a third' : 'a fifth';
    console.log(
      `outbound ${engine} vs bare sender (same run): burst ${defaultRate.toFixed(0)} / ${bareRate.toFixed(0)} = ${(defaultRate / bareRate).toFixed(2)} (goal ≥ 0.6); ` +
        `paced at ${pacedRate} events/s (${share} of the bare sender's ${bareBefore.burstRate.toFixed(0)}/s): p99 ${defaultP99.toFixed(0)} ms` +
        (engine === 'postgres' ? ' (goal < 50 ms)' : ' (goal: keeps up)') +
        `, ${mean('both', (o) => o.pacedRate).toFixed(0)} deliveries/s`,
    );
    const baseRate = mean('service', (o) => o.burstRate);
    for (const signing of SIGNINGS) {
      const rate = mean(signing, (o) => o.burstRate);
      const cost = (1 - rate / baseRate) * 100;
      console.log(
        `outbound ${engine} mean [${signing}]: burst ${rate.toFixed(0)} deliveries/s, paced p99 ${mean(signing, (o) => o.p99).toFixed(0)} ms` +
          (signing === 'service'
            ? ' (baseline: X-Service-Signature only)'
            : `; ${cost >= 0 ? '-' : '+'}${Math.abs(cost).toFixed(1)} % deliveries/s vs the baseline (budget: at most 10 % less)`),
      );
    }
  }
  if (only === 'outbound') continue;
  const inb = await inbound(engine);
  console.log(
    `inbound ${engine}: ${inb.rps.toFixed(0)} req/s, p50 ${inb.p50} ms, p99 ${inb.p99} ms (${inb.total} requests, non-2xx ${inb.non2xx}, errors ${inb.errors}); ` +
      `bare route (same HMAC, same run) ${inb.bareRps.toFixed(0)} req/s: ratio ${(inb.rps / inb.bareRps).toFixed(2)} (goal ≥ 0.6)`,
  );
  console.log(
    `  CPU per answer: service ${inb.cpu.service.toFixed(0)} µs, database server ${inb.cpu.database.toFixed(0)} µs, whole machine ${inb.cpu.machine.toFixed(0)} µs (of ${availableParallelism()} cores); bare route ${inb.bareCpu.route.toFixed(0)} µs, whole machine ${inb.bareCpu.machine.toFixed(0)} µs`,
  );
  if (inb.non2xx > 0 || inb.errors > 0 || inb.bareNon2xx > 0) failed = true;
}
if (failed) {
  console.error('bench:webhooks: some deliveries or requests failed');
  process.exit(1);
}
