/**
 * `npm run bench:api`: the partner API under load, beside a bare Fastify route, in one run.
 *
 * Runs on PGlite, and on PostgreSQL too when TEST_DATABASE_URL (or DATABASE_URL) names a server.
 * 1. Provisions a demo DATA_DIR: the service on the local chain (200 days), demo partners and keys,
 *    the metrics processor's history; then stops it and adds keys, so that per-key rate limits are
 *    not what is measured (each request rotates through 3,000 live keys).
 * 2. Starts the service again with ROLES=api (the worker off, so it does not compete for the two
 *    cores) and a bare Fastify server, each in its own process (both afresh for every round).
 * 3. Drives each endpoint from this process with autocannon (50 connections, 10 s after a 2 s
 *    warm-up) and samples the service's RSS every 100 ms.
 * Prints req/s, p50, p99, peak RSS and the server's CPU per answer for each endpoint, and each
 * endpoint's ratio to the baseline measured right beside it (issue #33 item 7): the list endpoints
 * to a bare route sending their own answer bytes, the others to the bare constant route, with
 * their goals. It measures; it fails only when the service answers errors.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { serviceNodeFlags } from '../scripts/node-flags.ts';
import { createApiKeysRepo } from '../src/db/api-keys.ts';
import { createDatabase } from '../src/db/client.ts';
import { createPartnersRepo } from '../src/db/partners.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/yield-service.mjs');
/**
 * The Node flags the service runs with on an engine (the bin's shebang for PGlite, as `npm start`;
 * `npm run start:api`'s on PostgreSQL): scripts/node-flags.ts.
 */
const serviceFlags = (engine: 'pglite' | 'postgres') => [
  ...serviceNodeFlags(engine),
  ...(process.env.X_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : []),
  // BENCH_NODE_FLAGS: more Node/V8 flags for the service, to try one (space-separated).
  ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
];
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 50;
// Live keys allow 1,000 requests a minute each: enough keys that the whole run stays under budget.
const KEYS = 3000;
/** BENCH_METRICS=1: on/off rounds per endpoint (their medians are compared). */
const METRICS_ROUNDS = Number(process.env.BENCH_METRICS_ROUNDS ?? 3);
/** BENCH_ROUNDS: how many times the whole sequence runs (each ratio: the median of its rounds). */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function start(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray; out: () => string }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: 'pipe' });
  let out = '';
  child.stderr?.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${ready}:\n${out.slice(-2000)}`)),
      300_000,
    );
    child.stdout?.on('data', (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m, out: () => out });
      }
    });
    child.on('exit', (code) =>
      reject(new Error(`exited ${code} before ${ready}:\n${out.slice(-2000)}`)),
    );
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

interface Scenario {
  name: string;
  url: string;
  paths: string[];
  keyed: boolean;
  pid: number;
}

/** Slices each endpoint and its baseline alternate in (BENCH_SLICES, even; 1 = one run each). */
const SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 6));

type Result = {
  name: string;
  pid: number;
  rps: number;
  cpuUsPerRequest: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  peakRssMb: number;
};

/** One scenario's load generator: `fire` a duration or an amount; `warm` before measuring. */
function loadOf(s: Scenario, keys: string[]) {
  let i = 0;
  const requests = [
    {
      setupRequest: (req: { path: string; headers: Record<string, string> }) => {
        req.path = s.paths[i % s.paths.length]!;
        if (s.keyed) req.headers = { ...req.headers, 'x-api-key': keys[i % keys.length]! };
        i++;
        return req;
      },
    },
  ];
  const fire = (limit: { duration: number } | { amount: number }) =>
    autocannon({ url: s.url, connections: CONNECTIONS, requests, ...limit } as autocannon.Options);
  return {
    fire,
    // Warm-up: JIT, connection pools, and the caches, so that every key and path is used at least
    // twice before the measured run. With a duration alone, loading 3,000 keys (one query each on
    // PGlite's single connection) spilled into the measured seconds of the first keyed endpoint.
    warm: () => fire({ amount: 2 * Math.max(KEYS, s.paths.length) + 20_000 }),
  };
}

/** Measures `seconds` of load on one scenario: req/s, latency, its process's CPU and peak RSS. */
async function measure(s: Scenario, load: ReturnType<typeof loadOf>, seconds: number) {
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(s.pid));
  }, 100);
  const cpu0 = cpuSeconds(s.pid);
  const started = performance.now();
  const r = await load.fire({ duration: seconds });
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(s.pid) - cpu0;
  clearInterval(sampler);
  peak = Math.max(peak, rssMb(s.pid));
  return { r, elapsed, cpu, peak };
}

type Slice = Awaited<ReturnType<typeof measure>>;

/** A scenario's figures from its measured slices: totals over time, the worst tail. */
function resultOf(s: Scenario, slices: Slice[]): Result {
  const total = slices.reduce((a, x) => a + x.r.requests.total, 0);
  const seconds = slices.reduce((a, x) => a + x.r.duration, 0);
  const cpu = slices.reduce((a, x) => a + x.cpu, 0);
  return {
    name: s.name,
    pid: s.pid,
    rps: seconds > 0 ? total / seconds : Number.NaN,
    // The server's CPU per answer: what the process spent, whatever else ran on the machine.
    cpuUsPerRequest: total > 0 ? (cpu * 1e6) / total : Number.NaN,
    p50: median(slices.map((x) => x.r.latency.p50)),
    p99: Math.max(...slices.map((x) => x.r.latency.p99)),
    non2xx: slices.reduce((a, x) => a + x.r.non2xx, 0),
    errors: slices.reduce((a, x) => a + x.r.errors + x.r.timeouts, 0),
    peakRssMb: Math.max(...slices.map((x) => x.peak)),
  };
}

async function run(s: Scenario, keys: string[]): Promise<Result> {
  const load = loadOf(s, keys);
  await load.warm();
  return resultOf(s, [await measure(s, load, DURATION_S)]);
}

/**
 * An endpoint and its baseline, measured in alternating slices (A B B A …) of the same total
 * time each: on this kind of machine the speed of the whole machine moves within a minute (the
 * bare route alone ran at 6,000 and 22,000 req/s in neighbouring runs), so two back-to-back runs
 * of DURATION_S put the endpoint and its baseline in different phases and their ratio swung from
 * 0.54 to 1.12 between runs of the same build. Interleaved, both sample the same phases.
 */
async function runPair(a: Scenario, b: Scenario, keys: string[]): Promise<[Result, Result]> {
  if (SLICES <= 1) return [await run(a, keys), await run(b, keys)];
  const loads = [loadOf(a, keys), loadOf(b, keys)] as const;
  await loads[0].warm();
  await loads[1].warm();
  const slices: [Slice[], Slice[]] = [[], []];
  const seconds = DURATION_S / SLICES;
  for (let k = 0; k < SLICES; k++) {
    // ABBA order: each side goes first as often as the other.
    const order = k % 4 === 0 || k % 4 === 3 ? [0, 1] : [1, 0];
    for (const side of order) {
      slices[side as 0 | 1].push(await measure(side === 0 ? a : b, loads[side as 0 | 1], seconds));
    }
  }
  return [resultOf(a, slices[0]), resultOf(b, slices[1])];
}

async function benchEngine(engine: 'pglite' | 'postgres'): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-bench-api-'));
  const children: ChildProcess[] = [];
  const pg = engine === 'postgres' ? await createBenchDatabase() : undefined;
  try {
    const env = {
      DATA_DIR: dataDir,
      PORT: '0',
      LOCAL_CHAIN_PORT: '0',
      LOG_LEVEL: 'warn',
      // PGlite: the api role alone on purpose (the worker off, so it does not compete for the
      // cores), which `start` otherwise refuses as a live-looking setup (src/main.ts).
      ...(pg ? { DATABASE_URL: pg.url } : { ALLOW_EMBEDDED_DATABASE: 'true' }),
    };
    console.log(`\n== ${engine} ==`);
    console.log('provisioning the demo (200-day local chain, metrics history)…');
    const t0 = performance.now();
    const first = await start(
      [BIN, 'start'],
      { ...env, LOG_LEVEL: 'info' },
      /"msg":"daily snapshots written"/,
    );
    children.push(first.child);
    // The events feed is measured at a page of 100: let the indexer store the history's events
    // (it runs beside the metrics processor) before the worker stops.
    const firstUrl = /listening on (http:\/\/\S+)/.exec(first.out())?.[1];
    const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    let stored = 0;
    for (let t = 0; t < 600 && firstUrl && stored < 100; t++) {
      const r = await fetch(`${firstUrl}/api/partner/events?limit=100`, {
        headers: { 'x-api-key': demo.partners[0].live.api_key },
      });
      if (r.status === 200)
        stored = ((await r.json()) as { data: { events: unknown[] } }).data.events.length;
      if (stored < 100) await new Promise((r) => setTimeout(r, 200));
    }
    console.log(`  events feed: ${stored >= 100 ? 'a full page of 100' : `only ${stored}`} stored`);
    await stop(first.child);
    console.log(`  ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const creds = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    const partner = creds.partners[0];
    const db = pg
      ? await createDatabase({ engine: 'postgres', url: pg.url })
      : await createDatabase({ engine: 'pglite', dataDir: path.join(dataDir, 'pglite') });
    const keys: string[] = [partner.live.api_key];
    try {
      const p = (await createPartnersRepo(db).findByName(partner.name))!;
      const repo = createApiKeysRepo(db);
      while (keys.length < KEYS) keys.push((await repo.create(p.id, 'live', 'bench')).key);
    } finally {
      await db.close();
    }

    const startApi = () =>
      start(
        [...serviceFlags(engine), BIN, 'start'],
        { ...env, ROLES: 'api' },
        /listening on (http:\/\/\S+)/,
      );
    const api = await startApi();
    children.push(api.child);
    const base = api.match[1]!;
    const slug = partner.live.products.active as string;
    // The chain comes up after the server listens: wait until health answers.
    const waitListening = async (p: { out: () => string }) => {
      const url = /listening on (http:\/\/\S+)/.exec(p.out())?.[1];
      for (let t = 0; t < 100 && url; t++) {
        const r = await fetch(`${url}/api/partner/products/${slug}/health`, {
          headers: { 'x-api-key': keys[0]! },
        });
        if (r.status === 200) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await waitListening(api);
    const day = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().slice(0, 10);
    // The list endpoints, each with a twin: a bare route that sends the endpoint's own answer
    // bytes and does nothing else, the ceiling for a body that size on this machine.
    const lists = [
      { name: 'products list', path: '/api/partner/products' },
      { name: 'apy-history 180 d', path: `/api/partner/products/${slug}/apy-history?days=180` },
      {
        name: 'fee-stats 365 d',
        path: `/api/partner/products/${slug}/fee-stats?start_date=${day(365 * 86_400_000)}&end_date=${day(0)}`,
      },
      // Issue #35: the events feed, newest first, a page of 100 (the largest page).
      { name: 'events feed, page of 100', path: '/api/partner/events?limit=100' },
    ].map((l, i) => ({ ...l, file: path.join(dataDir, `bare-body-${i}.json`), bytes: 0 }));
    for (const l of lists) {
      const res = await fetch(`${base}${l.path}`, { headers: { 'x-api-key': keys[0]! } });
      const body = Buffer.from(await res.arrayBuffer());
      l.bytes = body.length;
      writeFileSync(l.file, body);
    }
    const startBare = () =>
      start(
        ['--import', 'tsx', path.join(ROOT, 'bench/bare-server.ts')],
        { BARE_BODY_FILES: lists.map((l) => l.file).join(path.delimiter) },
        /bare listening on (http:\/\/\S+)/,
      );
    const bare = await startBare();
    children.push(bare.child);

    const wallets = Array.from({ length: 1000 }, (_, i) =>
      i < partner.live.wallets.length
        ? (partner.live.wallets[i] as string)
        : `0x${createHash('sha256').update(`wallet-${i}`).digest('hex').slice(0, 40)}`,
    );
    const apiPid = api.child.pid!;
    // BENCH_METRICS=1: the same endpoints also against a second API process with METRICS_PORT set
    // (per-request metrics recorded) and /metrics scraped every second, to price the metrics.
    // PostgreSQL only: PGlite allows one process per DATA_DIR.
    const withMetrics =
      process.env.BENCH_METRICS && engine === 'postgres'
        ? await start(
            [...serviceFlags(engine), BIN, 'start'],
            { ...env, ROLES: 'api', METRICS_PORT: '0' },
            /Metrics on (http:\/\/\S+)/,
          )
        : undefined;
    // Its twin without metrics, started with it: the two sides are processes of the same age that
    // serve the same requests. (Against the process that served every endpoint before, the "off"
    // side had served ~1.6 M requests more and ran slower than a fresh one: "on" came out faster.)
    const withoutMetrics = withMetrics
      ? await start(
          [...serviceFlags(engine), BIN, 'start'],
          { ...env, ROLES: 'api' },
          /listening on (http:\/\/\S+)/,
        )
      : undefined;
    if (withMetrics && withoutMetrics) {
      children.push(withMetrics.child, withoutMetrics.child);
      await waitListening(withMetrics);
      await waitListening(withoutMetrics);
    }
    const bareConstant = (name: string): Scenario => ({
      name,
      url: bare.match[1]!,
      paths: ['/bare'],
      keyed: false,
      pid: bare.child.pid!,
    });
    // Each endpoint is measured right beside its own baseline (issue #33 item 7): the list
    // endpoints beside a bare route sending their answer's bytes, the others beside the bare
    // constant route, run again just before each of them. On two shared cores the machine's speed
    // drifts over the minutes a run takes; a ratio of two neighbouring runs drifts far less than a
    // ratio to one bare figure taken at the start.
    const pointEndpoints = [
      { name: 'product detail', paths: [`/api/partner/products/${slug}`] },
      { name: 'yield-calc', paths: [`/api/partner/products/${slug}/yield-calc?amount=1000.5`] },
      { name: 'health', paths: [`/api/partner/products/${slug}/health`] },
      {
        name: 'position, 1,000 wallets',
        paths: wallets.map((w) => `/api/partner/products/${slug}/position?address=${w}`),
      },
    ];
    const scenarios: Scenario[] = [
      bareConstant('bare Fastify route'),
      ...lists.flatMap((l, i): Scenario[] => [
        { name: l.name, url: base, paths: [l.path], keyed: true, pid: apiPid },
        {
          name: `  bare, bytes of ${l.name} (${(l.bytes / 1024).toFixed(1)} KB)`,
          url: bare.match[1]!,
          paths: [`/bare-bytes/${i}`],
          keyed: false,
          pid: bare.child.pid!,
        },
      ]),
      ...pointEndpoints.flatMap((e): Scenario[] => [
        bareConstant(`  bare constant route, beside ${e.name}`),
        { name: e.name, url: base, paths: e.paths, keyed: true, pid: apiPid },
      ]),
    ];

    // BENCH_ONLY=fee-stats,products (substrings of scenario names; the bare route always runs).
    const only = process.env.BENCH_ONLY?.split(',');
    const metricsCompare: Array<{ name: string; off: number; on: number }> = [];
    const chosen = scenarios.filter((x, i) => {
      if (i === 0 || !only) return true;
      // BENCH_ONLY keeps an endpoint's neighbouring baseline with it.
      if (x.name.startsWith('  bare constant route, beside ')) {
        const of = x.name.slice('  bare constant route, beside '.length);
        return only.some((o) => of.includes(o));
      }
      return only.some((o) => x.name.includes(o));
    });
    // BENCH_ROUNDS: the whole sequence again, so each ratio is the median of its rounds, each
    // taken beside its own baseline (one round moved an endpoint by ±10 µs an answer).
    // Every round after the first starts the API and the bare server afresh: on a virtual machine a
    // process can run 40–50 µs an answer slower than its twin for its whole life (a draw of the
    // machine, cause unknown: docs/maintainers/operations.md), so rounds of the same two processes
    // would repeat that draw instead of sampling it.
    const rounds: Array<Awaited<ReturnType<typeof run>>[]> = [];
    const apiPids = new Set([apiPid]);
    let live = { api, bare };
    for (let round = 0; round < ROUNDS; round++) {
      if (ROUNDS > 1) console.log(`  round ${round + 1} of ${ROUNDS}`);
      if (round > 0) {
        await Promise.all([stop(live.api.child), stop(live.bare.child)]);
        live = { api: await startApi(), bare: await startBare() };
        children.push(live.api.child, live.bare.child);
        apiPids.add(live.api.child.pid!);
        await waitListening(live.api);
      }
      const these: Result[] = [];
      const here = (c: Scenario): Scenario =>
        c.pid === apiPid
          ? { ...c, url: live.api.match[1]!, pid: live.api.child.pid! }
          : c.pid === bare.child.pid
            ? { ...c, url: live.bare.match[1]!, pid: live.bare.child.pid! }
            : c;
      for (let k = 0; k < chosen.length; k++) {
        const c = chosen[k]!;
        const next = chosen[k + 1];
        // After the first (the bare route alone), scenarios come in pairs: an endpoint and its
        // baseline, one on each process, measured interleaved.
        const paired = k > 0 && next !== undefined && (c.pid === apiPid) !== (next.pid === apiPid);
        const rs = paired ? await runPair(here(c), here(next), keys) : [await run(here(c), keys)];
        if (paired) k++;
        for (const r of rs) {
          these.push(r);
          console.log(`  ${r.name}: ${Math.round(r.rps)} req/s`);
        }
      }
      rounds.push(these);
    }
    // The table shows each scenario's median round (by req/s), and its highest RSS of all rounds.
    const results = chosen.map((_, i) => {
      const runs = rounds.map((r) => r[i]!).sort((a, b) => a.rps - b.rps);
      const mid = runs[Math.floor(runs.length / 2)]!;
      return { ...mid, peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)) };
    });
    const bareRps = results[0]!.rps;
    if (withMetrics && withoutMetrics) {
      const metricsBase = /listening on (http:\/\/\S+)/.exec(withMetrics.out())![1]!;
      const plainBase = withoutMetrics.match[1]!;
      const scrapeUrl = withMetrics.match[1]!;
      let scrapes = 0;
      const scraper = setInterval(() => {
        void fetch(scrapeUrl)
          .then((r) => r.text())
          .then(
            () => scrapes++,
            () => {},
          );
      }, 1_000);
      console.log('\nmetrics on/off (METRICS_PORT set, /metrics scraped every second):');
      try {
        for (const s of scenarios.filter((x) => x.pid === apiPid)) {
          if (only && !only.some((o) => s.name.includes(o))) continue;
          // Interleaved rounds, alternating which goes first, so both see the same machine; the
          // median of each side, so one disturbed run does not decide the figure.
          const runOn = () => run({ ...s, url: metricsBase, pid: withMetrics.child.pid! }, keys);
          const runOff = () => run({ ...s, url: plainBase, pid: withoutMetrics.child.pid! }, keys);
          const offs: number[] = [];
          const ons: number[] = [];
          for (let round = 0; round < METRICS_ROUNDS; round++) {
            if (round % 2 === 0) {
              offs.push((await runOff()).rps);
              ons.push((await runOn()).rps);
            } else {
              ons.push((await runOn()).rps);
              offs.push((await runOff()).rps);
            }
          }
          const off = median(offs);
          const on = median(ons);
          metricsCompare.push({ name: s.name, off, on });
          console.log(
            `  ${s.name.padEnd(28)} off ${Math.round(off)} req/s, on ${Math.round(on)} req/s (medians of ${METRICS_ROUNDS}): ${(((off - on) / off) * 100).toFixed(1)} % cost`,
          );
        }
      } finally {
        clearInterval(scraper);
      }
      const offSum = metricsCompare.reduce((a, r) => a + r.off, 0);
      const onSum = metricsCompare.reduce((a, r) => a + r.on, 0);
      console.log(
        `  all endpoints: ${(((offSum - onSum) / offSum) * 100).toFixed(1)} % throughput cost of metrics (target < 5 %), ${scrapes} scrapes; load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
    }
    console.log(
      `\nnpm run bench:api — ${CONNECTIONS} connections, ${DURATION_S} s per endpoint, ${KEYS} keys, Node ${process.version}`,
    );
    console.log(
      'endpoint                                      req/s   ratio   p50 ms  p99 ms  peak RSS MB  non-2xx  errors  CPU µs/req',
    );
    for (const r of results) {
      console.log(
        `${r.name.padEnd(44)} ${String(Math.round(r.rps)).padStart(6)}  ${(r.rps / bareRps).toFixed(2).padStart(6)}  ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)}  ${r.peakRssMb.toFixed(0).padStart(11)}  ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}  ${r.cpuUsPerRequest.toFixed(0).padStart(10)}`,
      );
    }
    // Issue #33 item 7's goals: every ratio beside its neighbouring baseline, and the RSS.
    console.log(`\n${engine}: each endpoint beside its baseline, measured next to it (goal):`);
    const goals: Array<{ name: string; goal: number | undefined; baseline: 'bytes' | 'constant' }> =
      [
        { name: 'products list', goal: 0.9, baseline: 'bytes' },
        { name: 'apy-history 180 d', goal: 0.9, baseline: 'bytes' },
        { name: 'fee-stats 365 d', goal: 0.9, baseline: 'bytes' },
        { name: 'events feed, page of 100', goal: undefined, baseline: 'bytes' },
        { name: 'product detail', goal: 0.6, baseline: 'constant' },
        { name: 'yield-calc', goal: 0.6, baseline: 'constant' },
        { name: 'health', goal: 0.6, baseline: 'constant' },
        { name: 'position, 1,000 wallets', goal: 0.6, baseline: 'constant' },
      ];
    let missed = 0;
    for (const g of goals) {
      const at = results.findIndex((r) => r.name === g.name);
      // The list endpoints' twin runs after them; the constant route runs before the others.
      const twinAt = g.baseline === 'bytes' ? at + 1 : at - 1;
      const twin = at < 0 ? undefined : results[twinAt];
      const expected = g.baseline === 'bytes' ? 'bare, bytes of' : 'bare constant route';
      if (at < 0 || !twin?.name.includes(expected)) continue;
      // The median of the rounds' ratios, each of an endpoint and the baseline run beside it.
      const ratios = rounds.map((r) => r[at]!.rps / r[twinAt]!.rps);
      const ratio = median(ratios);
      const cpuRatios = rounds.map((r) => r[twinAt]!.cpuUsPerRequest / r[at]!.cpuUsPerRequest);
      const meets = g.goal === undefined || ratio >= g.goal;
      if (!meets) missed++;
      const against =
        g.baseline === 'bytes'
          ? `a bare route sending its same ${lists.find((l) => l.name === g.name)?.bytes} bytes`
          : 'the bare constant route';
      // The same comparison by the server's CPU per answer (baseline's ÷ endpoint's): what the
      // ratio of req/s would be if both were limited by their own CPU alone. Steadier than req/s
      // when other work shares the cores; printed beside it, the goal is judged on req/s.
      const cpuRatio = median(cpuRatios);
      const each = ROUNDS > 1 ? ` [rounds: ${ratios.map((x) => x.toFixed(2)).join(', ')}]` : '';
      console.log(
        `  ${g.name.padEnd(26)} ${ratio.toFixed(2)}${each} of ${against} (${Math.round(results[at]!.rps)} vs ${Math.round(twin.rps)} req/s)${g.goal === undefined ? '' : `, goal >= ${g.goal.toFixed(2)}: ${meets ? 'met' : 'NOT met'}`}; by CPU per answer ${cpuRatio.toFixed(2)} (${Math.round(results[at]!.cpuUsPerRequest)} vs ${Math.round(twin.cpuUsPerRequest)} µs)`,
      );
    }
    const peakRss = Math.max(
      ...rounds
        .flat()
        .filter((r) => apiPids.has(r.pid))
        .map((r) => r.peakRssMb),
    );
    console.log(
      `  peak RSS of the API process: ${peakRss.toFixed(0)} MB, goal < 300 MB: ${peakRss < 300 ? 'met' : 'NOT met'}`,
    );
    console.log(
      `  ${missed === 0 && peakRss < 300 ? 'every goal met' : `${missed + (peakRss < 300 ? 0 : 1)} goal(s) not met`}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const failed = rounds.flat().filter((r) => r.non2xx > 0 || r.errors > 0);
    if (failed.length) {
      console.error(`errors answered by: ${[...new Set(failed.map((r) => r.name))].join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    for (const c of children) await stop(c).catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
    await pg?.drop();
  }
}

/** A fresh PostgreSQL database for the PostgreSQL run, on the server TEST_DATABASE_URL names. */
async function createBenchDatabase() {
  const admin = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!admin) throw new Error('no PostgreSQL URL');
  const name = `pys_bench_${Date.now()}`;
  const run = async (sql: string) => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

// PGlite always; PostgreSQL too when a server is named. The API process holds PGlite's WASM heap
// in its RSS, so the two runs differ mostly there.
const engines: Array<'pglite' | 'postgres'> = ['pglite'];
if (process.env.TEST_DATABASE_URL || process.env.DATABASE_URL) engines.push('postgres');
// BENCH_ENGINE=pglite|postgres: one engine only (profiling).
const chosen = process.env.BENCH_ENGINE;
if (chosen === 'pglite' || chosen === 'postgres') engines.splice(0, engines.length, chosen);
for (const engine of engines) await benchEngine(engine);
