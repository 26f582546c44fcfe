/** The service as a real process: first run, probes, graceful shutdown, bad configuration. */
import { chmodSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ChainSettings } from '../src/chain/chains.ts';
import { loadConfig } from '../src/config.ts';
import { embeddedDatabaseRefusal } from '../src/main.ts';
import { runCliInProcess } from './helpers/cli.ts';
import { freshDatabase, postgresAdminUrl } from './helpers/db.ts';
import { deadPort } from './helpers/net.ts';
import { spawnCli, waitFor } from './helpers/process.ts';
import { scratchRoot } from './helpers/scratch.ts';

const dirs: string[] = [];
/** A small local chain on a free port: the default 200 days on 8545 is for `npm start`. */
const CHAIN = { LOCAL_CHAIN_PORT: '0', LOCAL_CHAIN_DAYS: '2', DEMO: 'false' };
const tempDir = () => {
  // Beside the test databases (helpers/scratch.ts): seededDir moves one in by a rename.
  const d = mkdtempSync(path.join(scratchRoot(), 'pys-proc-'));
  dirs.push(d);
  return d;
};
/** A CHAINS_FILE naming one chain whose node is down: the service starts without building anvil. */
async function deadChainsFile(dir: string): Promise<string> {
  const file = path.join(dir, 'chains.json');
  const rpc = `http://127.0.0.1:${await deadPort()}`;
  writeFileSync(
    file,
    JSON.stringify([
      {
        chain_id: 31337,
        name: 'down',
        rpc_urls: [rpc],
        confirmation_depth: 2,
        block_range_limit: 1000,
      },
    ]),
  );
  return file;
}
/**
 * A DATA_DIR whose embedded database is already migrated (a copy of the test template), for the
 * tests that are not about a first run: the start then skips initdb, seconds on a loaded machine.
 */
const seededDir = async () => {
  const d = tempDir();
  const t = await freshDatabase('pglite');
  await t.db.close();
  renameSync(t.location, path.join(d, 'pglite'));
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// Each test spawns the service and awaits what it prints: generous budgets, since a loaded
// two-core machine can take a minute to start it; a passing run does not wait for them.
describe('the service process', { timeout: 240_000 }, () => {
  it('starts on a fresh DATA_DIR, answers /health, and exits 0 on SIGTERM with no error logged', async () => {
    const p = spawnCli(['start'], { ...CHAIN, DATA_DIR: tempDir(), PORT: '0' });
    const url = await waitFor(
      () => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1],
      120_000, // a first PGlite initdb takes long on a loaded two-core machine
      `the listening line (stderr: ${p.stderr()})`,
    );
    const health = await fetch(`${url}/health`);
    expect(await health.json()).toEqual({ success: true, data: { status: 'ok' } });
    // Ready once storage and the chain runtime are up (liveness answers before).
    await waitFor(
      async () => (await fetch(`${url}/ready`)).status === 200 || undefined,
      120_000, // building the local chain takes a while on a loaded two-core machine
      'readiness',
    );
    p.child.kill('SIGTERM');
    const { code } = await p.exited;
    expect(code).toBe(0);
    const lines = p
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(lines.some((l) => l.includes('"msg":"shutdown complete"'))).toBe(true);
    expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    expect(p.stderr()).toBe('');
  });

  it('answers liveness within 10 s on a fresh DATA_DIR, before storage and the chain are ready', async () => {
    const started = Date.now();
    const p = spawnCli(['start'], {
      ...CHAIN,
      LOCAL_CHAIN_DAYS: '20',
      DATA_DIR: tempDir(),
      PORT: '0',
    });
    // Fastify's own log line comes as soon as the socket listens.
    const url = await waitFor(
      () => /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(p.stdout())?.[1],
      10_000,
      'the server socket',
    );
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(p.stdout()).not.toContain('Local chain RPC URL');
    // Then the chain comes up in the background and is printed.
    await waitFor(() => /Local chain RPC URL http:\S+/.exec(p.stdout())?.[0], 90_000, 'the chain');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('exits within SHUTDOWN_TIMEOUT_MS on SIGTERM when its stdout and stderr readers are gone', async () => {
    // The parent died: the service's stdout is a closed pipe and every log line fails with EPIPE.
    // Before, the exit-time flush of the logs retried EPIPE forever and the process slept on.
    // A chain whose node is down (no anvil to build): the worker's failing ticks log too.
    const dir = await seededDir();
    const p = spawnCli(['start'], {
      DATA_DIR: dir,
      PORT: '0',
      CHAINS_FILE: await deadChainsFile(dir),
      SHUTDOWN_TIMEOUT_MS: '3000',
    });
    const url = await waitFor(
      () => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1],
      120_000,
      `listening (stderr: ${p.stderr()})`,
    );
    await waitFor(() => /"msg":"worker started"/.exec(p.stdout())?.[0], 60_000, 'the worker');
    // The reader first stops reading (the pipe fills with access lines), then goes away.
    p.child.stdout?.pause();
    const flood = async () => {
      for (let i = 0; i < 150; i++) await fetch(`${url}/health`).then((r) => r.arrayBuffer());
    };
    await Promise.all(Array.from({ length: 16 }, flood));
    setTimeout(() => {
      p.child.stdout?.destroy();
      p.child.stderr?.destroy();
    }, 300).unref();
    const signalled = Date.now();
    p.child.kill('SIGTERM');
    const outcome = await Promise.race([
      p.exited,
      new Promise<'alive'>((r) => setTimeout(() => r('alive'), 3000 + 2000).unref()),
    ]);
    if (outcome === 'alive') p.child.kill('SIGKILL');
    expect(outcome).not.toBe('alive');
    expect(Date.now() - signalled).toBeLessThan(5000);
  }, 240_000);

  // From here on each test has its own DATA_DIR, port and process and asserts no timing: they run
  // side by side (at most vitest's maxConcurrency, 5, at once) while their services start (#13).
  // The two timed tests above (liveness within 10 s, the shutdown timeout) run alone.
  it.concurrent('exits 0 on SIGINT too', async ({ expect }) => {
    const p = spawnCli(['start'], {
      ...CHAIN,
      DATA_DIR: await seededDir(),
      PORT: '0',
      ROLES: 'api',
      ALLOW_EMBEDDED_DATABASE: 'true', // one role alone on the embedded database, on purpose
    });
    await waitFor(() => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1], 120_000, 'listening');
    p.child.kill('SIGINT');
    const exit = await p.exited;
    expect(exit, `stdout: ${p.stdout().slice(-1500)}\nstderr: ${p.stderr()}`).toEqual({
      code: 0,
      signal: null,
    });
  });

  it.concurrent('shuts down when the parent that started it goes away (its IPC channel closes)', async ({
    expect,
  }) => {
    const dir = await seededDir();
    const p = spawnCli(['start'], {
      DATA_DIR: dir,
      PORT: '0',
      ROLES: 'api',
      ALLOW_EMBEDDED_DATABASE: 'true', // one role alone on the embedded database, on purpose
      CHAINS_FILE: await deadChainsFile(dir),
    });
    await waitFor(() => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1], 120_000, 'listening');
    p.child.disconnect();
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(p.stdout()).toContain('"signal":"parent disconnected"');
  }, 240_000);

  it.concurrent('stops at once with one clear line when a setting is bad', async ({ expect }) => {
    const p = spawnCli(['start'], { DATA_DIR: tempDir(), PORT: 'eighty' });
    const { code } = await p.exited;
    expect(code).toBe(78);
    expect(p.stderr().trim()).toBe(
      'Configuration error: PORT: expected an integer from 0 to 65535 (got "eighty")',
    );
  });

  it.concurrent('refuses, in one line, a master key other than the one the stored secrets are under', async ({
    expect,
  }) => {
    // Found by an operator's QA pass: started without MASTER_KEY on a database of a service that
    // has one, the process made a key file of its own, answered /ready 200 and failed every
    // delivery ("the master key differs"); a CLI so run stored secrets the service could not read.
    const dir = await seededDir();
    const keyA = 'a'.repeat(64);
    const keyB = 'b'.repeat(64);
    const cli = (args: string[], env: Record<string, string>) =>
      runCliInProcess(args, { env: { DATA_DIR: dir, LOG_LEVEL: 'silent', ...env } });
    expect((await cli(['partner', 'create', '--name', 'Acme Wallet'], {})).code).toBe(0);
    const added = await cli(
      [
        'webhook',
        'add',
        '--partner',
        'Acme Wallet',
        '--env',
        'live',
        '--url',
        'https://hooks.example.com/a',
      ],
      { MASTER_KEY: keyA },
    );
    expect(added.code).toBe(0);
    // A command that stores a secret, run without the service's key: refused, nothing stored.
    const stray = await cli(
      [
        'webhook',
        'add',
        '--partner',
        'Acme Wallet',
        '--env',
        'live',
        '--url',
        'https://hooks.example.com/b',
      ],
      {},
    );
    expect(stray.code).toBe(78);
    expect(stray.err).toMatch(
      /^Configuration error: MASTER_KEY: this database's secrets are encrypted under another master key than the key file .*master\.key \(MASTER_KEY is not set here\): webhook destination whk_\w+'s signing secret does not decrypt\. Set MASTER_KEY to the key every other process of this service runs with\.\n$/,
    );
    const listed = await cli(['webhook', 'list', '--json'], {});
    expect(JSON.parse(listed.out)).toHaveLength(1);
    // The service with another key stops before it listens.
    const p = spawnCli(['start'], {
      DATA_DIR: dir,
      PORT: '0',
      ROLES: 'api',
      ALLOW_EMBEDDED_DATABASE: 'true', // one role alone on the embedded database, on purpose
      MASTER_KEY: keyB,
      CHAINS_FILE: await deadChainsFile(dir),
    });
    expect((await p.exited).code).toBe(78);
    expect(p.stderr()).toMatch(
      /^Configuration error: MASTER_KEY: this database's secrets are encrypted under another master key than MASTER_KEY: webhook destination whk_\w+'s signing secret does not decrypt\./,
    );
    expect(p.stderr().trim().split('\n')).toHaveLength(1);
    expect(p.stdout()).not.toContain('listening on');
  });

  it.concurrent('exits 1 with one line when the database cannot be reached', async ({ expect }) => {
    const p = spawnCli(['start'], {
      DATA_DIR: tempDir(),
      PORT: '0',
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await deadPort()}/none`,
    });
    expect((await p.exited).code).toBe(1);
    expect(p.stderr()).toMatch(
      /^yield-service: cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/none \(DATABASE_URL\): connection refused: check that PostgreSQL runs and listens on that host and port\n$/,
    );
  });

  it.concurrent('a CHAINS_FILE or signer mistake stops the start before it listens: one line, exit 78', async ({
    expect,
  }) => {
    const dir = tempDir();
    const chain = {
      chain_id: 8453,
      name: 'base',
      rpc_urls: [`http://127.0.0.1:${await deadPort()}`],
      confirmation_depth: 2,
      block_range_limit: 1000,
    };
    const invalid = path.join(dir, 'invalid.json');
    writeFileSync(invalid, '[\n  {"chain_id": 8453,\n  }\n]\n');
    const unsetEnv = path.join(dir, 'unset-env.json');
    writeFileSync(unsetEnv, JSON.stringify([{ ...chain, signer: { env: 'PYS_TEST_UNSET_KEY' } }]));
    const keyFile = path.join(dir, 'deployer.key');
    writeFileSync(keyFile, `0x${'11'.repeat(32)}\n`, { mode: 0o644 });
    chmodSync(keyFile, 0o644);
    const openKey = path.join(dir, 'open-key.json');
    writeFileSync(openKey, JSON.stringify([{ ...chain, signer: { file: keyFile } }]));
    const cases: Array<[string, string]> = [
      [
        path.join(dir, 'missing.json'),
        `CHAINS_FILE: cannot read "${path.join(dir, 'missing.json')}": no such file (ENOENT): check the path`,
      ],
      [
        invalid,
        `CHAINS_FILE "${invalid}": not valid JSON (line 3, column 3: Expected double-quoted property name)`,
      ],
      [
        unsetEnv,
        "chain 8453: the environment variable PYS_TEST_UNSET_KEY (signer.env) is not set: set it to the deployer's private key in the service's environment",
      ],
      [
        openKey,
        `chain 8453: key file ${keyFile} is open to group or others (mode 644): run \`chmod 600 ${keyFile}\` (owned by the service user) and start again`,
      ],
    ];
    await Promise.all(
      cases.map(async ([file, line]) => {
        const p = spawnCli(['start'], { DATA_DIR: tempDir(), PORT: '0', CHAINS_FILE: file });
        expect((await p.exited).code).toBe(78);
        expect(p.stderr()).toBe(`Configuration error: ${line}\n`);
        // Refused before the API listened, and without a stack in the logs.
        expect(p.stdout()).not.toMatch(/listening/i);
        expect(p.stdout()).not.toMatch(/"stack"/);
      }),
    );
  });

  it.concurrent('refuses the embedded database where the setup looks live: one line naming DATABASE_URL, exit 78, nothing touched', async ({
    expect,
  }) => {
    const dir = tempDir();
    const base = path.join(dir, 'base.json');
    writeFileSync(
      base,
      JSON.stringify([
        {
          chain_id: 8453,
          name: 'base',
          rpc_urls: [`http://127.0.0.1:${await deadPort()}`],
          confirmation_depth: 2,
          block_range_limit: 1000,
        },
      ]),
    );
    const split = (role: string, other: string) =>
      `ROLES is ${role}: the ${other} role runs in another process, which cannot share an embedded database`;
    const cases: Array<[Record<string, string>, string]> = [
      [{ CHAINS_FILE: base }, 'CHAINS_FILE names chain 8453 (base), not a local development chain'],
      [{ ROLES: 'api' }, split('api', 'worker')],
      [{ ROLES: 'worker', CHAINS_FILE: await deadChainsFile(dir) }, split('worker', 'api')],
      [
        { ROLES: 'api', CHAINS_FILE: base },
        `CHAINS_FILE names chain 8453 (base), not a local development chain; and ${split('api', 'worker')}`,
      ],
    ];
    await Promise.all(
      cases.map(async ([env, why]) => {
        const dataDir = tempDir();
        const p = spawnCli(['start'], { ...CHAIN, DATA_DIR: dataDir, PORT: '0', ...env });
        // Its exit, or its server socket (a start that was not refused: stopped at once).
        let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
        void p.exited.then((e) => {
          exit = e;
        });
        const outcome = await waitFor(
          () => exit ?? (p.stdout().includes('"msg":"Server listening') ? 'listening' : undefined),
          120_000,
          'its exit or its server socket',
        );
        if (outcome === 'listening') {
          p.child.kill('SIGTERM');
          await p.exited;
        }
        expect(outcome, p.stderr()).toEqual({ code: 78, signal: null });
        expect(p.stderr()).toBe(
          `Configuration error: DATABASE_URL: not set, while ${why}. This start would run on the embedded PGlite database in ${path.join(dataDir, 'pglite')}, which only this process can open and nothing backs up. Set DATABASE_URL to the service's PostgreSQL database (postgres://user:password@host:5432/database); to use the embedded database on purpose (a rehearsal, a test), set ALLOW_EMBEDDED_DATABASE=true.\n`,
        );
        // Refused before it listened, and before it wrote anything: no database, no key file.
        expect(p.stdout()).not.toMatch(/listening/i);
        expect(readdirSync(dataDir)).toEqual([]);
      }),
    );

    // On purpose: the same live-looking setup starts on the embedded database.
    const kept = await seededDir();
    const p = spawnCli(['start'], {
      DATA_DIR: kept,
      PORT: '0',
      ROLES: 'api',
      CHAINS_FILE: base,
      ALLOW_EMBEDDED_DATABASE: 'true',
    });
    const url = await waitFor(
      () => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1],
      120_000,
      `listening (stderr: ${p.stderr()})`,
    );
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect(p.stdout()).toContain('"engine":"pglite"');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });

  it('the rule: live-looking is a chain that is not a development chain, or one role alone', () => {
    const chain = (chainId: number, local?: boolean) =>
      ({ chainId, name: `c${chainId}`, ...(local ? { local } : {}) }) as ChainSettings;
    const refused = (env: Record<string, string>, chains?: ChainSettings[]) =>
      embeddedDatabaseRefusal(loadConfig({ DATA_DIR: '/srv/pys', ...env }), chains)?.message;
    // The README's `npm start` (both roles, the local chain) and a node of one's own.
    expect(refused({})).toBeUndefined();
    expect(refused({}, [chain(31337), chain(1337)])).toBeUndefined();
    expect(refused({}, [chain(8453, true)])).toBeUndefined();
    expect(refused({ ROLES: 'worker,api' })).toBeUndefined();
    // PostgreSQL, or the embedded database on purpose: never refused.
    expect(
      refused({ DATABASE_URL: 'postgres://db.example.com/pys', ROLES: 'api' }, [chain(1)]),
    ).toBeUndefined();
    expect(refused({ ALLOW_EMBEDDED_DATABASE: 'true', ROLES: 'api' }, [chain(1)])).toBeUndefined();
    // Live: every chain that is not a development one is named.
    expect(refused({}, [chain(31337), chain(1), chain(42161)])).toMatch(
      /^DATABASE_URL: not set, while CHAINS_FILE names chains 1 \(c1\), 42161 \(c42161\), not a local development chain\. .* in \/srv\/pys\/pglite, /,
    );
    expect(refused({ ROLES: 'worker' })).toMatch(
      /^DATABASE_URL: not set, while ROLES is worker: the api role runs in another process, /,
    );
    expect(() => loadConfig({ ALLOW_EMBEDDED_DATABASE: 'yes' })).toThrow(
      'ALLOW_EMBEDDED_DATABASE: expected true or false (got "yes")',
    );
  });

  it.concurrent('migrate applies the schema once, then reports it is up to date', async ({
    expect,
  }) => {
    const dataDir = tempDir();
    const first = spawnCli(['migrate'], { DATA_DIR: dataDir });
    expect((await first.exited).code).toBe(0);
    // Which database it migrated: here the embedded one, since DATABASE_URL is not set.
    const target = `the embedded PGlite database in ${path.join(dataDir, 'pglite')} (DATABASE_URL is not set)`;
    expect(first.stdout().startsWith(`Applied `)).toBe(true);
    expect(first.stdout()).toMatch(/^Applied \d+ migration\(s\) to the embedded PGlite/);
    expect(first.stdout()).toContain(` to ${target}: 0001_partners`);
    // The same command in this process (helpers/cli.ts): the spawned run above is the smoke test.
    const second = await runCliInProcess(['migrate'], { env: { DATA_DIR: dataDir } });
    expect(second.code).toBe(0);
    expect(second.out).toBe(`Database is up to date: ${target}.\n`);
  });

  it.runIf(postgresAdminUrl()).concurrent(
    'runs on PostgreSQL when DATABASE_URL is set',
    async ({ expect, onTestFinished }) => {
      // A database of its own, empty: the service migrates it (the server's shared database may
      // hold another build's migrations).
      const own = await freshDatabase('postgres', { migrated: false });
      onTestFinished(() => own.drop());
      const p = spawnCli(['start'], {
        ...CHAIN,
        DATA_DIR: tempDir(),
        PORT: '0',
        ROLES: 'api',
        DATABASE_URL: own.location,
      });
      const url = await waitFor(
        () => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1],
        120_000, // as the others: it starts beside the tests above
        'listening',
      );
      // Ready once storage and the chain runtime are up (liveness answers before).
      await waitFor(
        async () => (await fetch(`${url}/ready`)).status === 200 || undefined,
        120_000, // building the local chain takes a while on a loaded two-core machine
        'readiness',
      );
      expect(p.stdout()).toContain('"engine":"postgres"');
      p.child.kill('SIGTERM');
      expect((await p.exited).code).toBe(0);
    },
  );
});
