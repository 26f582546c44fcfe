/**
 * `npm start` stops with everything it started (issue #30 item 5): SIGTERM or SIGINT to the npm
 * process (the README's `npm start &`, then `kill %1`) reaches the service, which stops its local
 * chain, within the shutdown timeout; no process of the service or its chain is left behind. The
 * script `exec`s node, so no shell sits between npm (which forwards the signal) and the service.
 * A terminal's Ctrl-C (SIGINT to the whole process group, anvil included) once the demo is ready:
 * the service still saves the chain (anvil has its own group), without the states of past blocks.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from './helpers/process.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Every descendant of `pid`, from the process table. */
function descendants(pid: number): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of table) {
      if (parent === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** `npm start` in its own process group, as a terminal gives it (signal it with -pid, as Ctrl-C). */
function startInGroup(dir: string, env: Record<string, string> = {}) {
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: true,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dir,
      PORT: '0',
      LOCAL_CHAIN_PORT: '0',
      LOCAL_CHAIN_DAYS: '2',
      LOG_LEVEL: 'warn',
      SHUTDOWN_TIMEOUT_MS: '10000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout.on('data', (d) => {
    out += d;
  });
  npm.stderr.on('data', (d) => {
    out += d;
  });
  return { npm, out: () => out };
}

describe('npm start', { timeout: 180_000 }, () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s to the npm process stops the service and its local chain, leaving nothing behind',
    async (signal) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'pys-npm-start-'));
      dirs.push(dir);
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          DATA_DIR: dir,
          PORT: '0',
          LOCAL_CHAIN_PORT: '0',
          LOCAL_CHAIN_DAYS: '2',
          LOG_LEVEL: 'warn',
          SHUTDOWN_TIMEOUT_MS: '10000',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      npm.stdout.on('data', (d) => {
        out += d;
      });
      npm.stderr.on('data', (d) => {
        out += d;
      });
      await waitFor(
        () => (out.includes('Local chain RPC URL') ? true : undefined),
        120_000,
        'the chain',
      );
      const started = descendants(npm.pid!);
      const commands = started.map((pid) =>
        execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).trim(),
      );
      // The service and its anvil, under npm with no shell in between.
      expect(commands.some((c) => c.includes('bin/yield-service.mjs start'))).toBe(true);
      expect(commands.some((c) => c.includes('anvil'))).toBe(true);
      expect(commands.some((c) => /^(\/bin\/)?sh /.test(c))).toBe(false);
      const exited = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
      const sent = Date.now();
      npm.kill(signal);
      await exited;
      await waitFor(
        () => (started.every((pid) => !alive(pid)) ? true : undefined),
        12_000,
        `every process npm started to stop (${commands.join('; ')})`,
      );
      expect(Date.now() - sent).toBeLessThan(12_000);
      expect(out).not.toMatch(/"level":(50|60)/);
    },
  );

  it('Ctrl-C during the first build of the chain stops at once, unsaved, and says so', async () => {
    // Found by QA: a stop waited for the whole build (about a minute for 200 days) and then saved it.
    const dir = mkdtempSync(path.join(tmpdir(), 'pys-npm-start-'));
    dirs.push(dir);
    const run = startInGroup(dir, { LOCAL_CHAIN_DAYS: '200', LOG_LEVEL: 'info' });
    // The build is under way once anvil runs and before the chain is announced.
    const anvil = await waitFor(
      () =>
        descendants(run.npm.pid!).find((pid) => {
          try {
            return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], {
              encoding: 'utf8',
            }).includes('anvil');
          } catch {
            return false; // gone between the two reads of the process table
          }
        }),
      60_000,
      'anvil to start',
    );
    await new Promise((r) => setTimeout(r, 1_000));
    expect(run.out()).not.toContain('Local chain RPC URL');
    const started = [run.npm.pid!, ...descendants(run.npm.pid!)];
    const exited = new Promise<number | null>((r) => run.npm.once('exit', (code) => r(code)));
    const sent = Date.now();
    process.kill(-run.npm.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    expect(Date.now() - sent).toBeLessThan(8_000);
    expect(alive(anvil)).toBe(false);
    await waitFor(
      () => (started.every((pid) => !alive(pid)) ? true : undefined),
      5_000,
      'every process to stop',
    );
    expect(run.out()).toContain('the first build of the local chain was stopped');
    expect(run.out()).not.toMatch(/"level":(50|60)/);
    // Nothing half-built is kept: the next start builds the chain again.
    expect(existsSync(path.join(dir, 'chain', 'anvil-state.json'))).toBe(false);
  });

  it('Ctrl-C after the demo is ready saves the chain without its past states, and it reloads', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pys-npm-start-'));
    dirs.push(dir);
    const run = () => startInGroup(dir);
    const first = run();
    await waitFor(
      () => (first.out().includes('Demo ready') ? true : undefined),
      150_000,
      'the demo',
    );
    const started = descendants(first.npm.pid!);
    const exited = new Promise<void>((r) => first.npm.once('exit', () => r()));
    process.kill(-first.npm.pid!, 'SIGINT');
    await exited;
    await waitFor(
      () => (started.every((pid) => !alive(pid)) ? true : undefined),
      12_000,
      'every process to stop',
    );
    expect(first.out()).not.toMatch(/"level":(50|60)/);
    const chain = path.join(dir, 'chain');
    expect(existsSync(path.join(chain, 'anvil-state.json'))).toBe(true);
    const deployment = JSON.parse(readFileSync(path.join(chain, 'deployment.json'), 'utf8'));
    expect(deployment.stateReadableFromBlock).toBeGreaterThan(deployment.historyEndBlock);

    // The saved chain reloads, and the demo is ready again without computing anything anew.
    const second = run();
    try {
      await waitFor(
        () => (second.out().includes('Demo ready') ? true : undefined),
        120_000,
        'the demo after the reload',
      );
      expect(second.out()).toContain('Local chain RPC URL');
      expect(second.out()).not.toMatch(/"level":(50|60)/);
      // PORT=0: this start listens elsewhere than the first. demo-credentials.json names this
      // start's addresses (it kept the first start's, and the guide's wait for /ready hung).
      const creds = JSON.parse(readFileSync(path.join(dir, 'demo-credentials.json'), 'utf8'));
      expect(creds.base_url).toBe(/listening on (http:\/\/\S+)/.exec(second.out())?.[1]);
      expect(creds.rpc_url).toBe(/Local chain RPC URL (\S+)/.exec(second.out())?.[1]);
      expect(
        /listening on (http:\/\/\S+)/.exec(first.out())?.[1],
        'the two starts listen on different ports',
      ).not.toBe(creds.base_url);
    } finally {
      const done = new Promise<void>((r) => second.npm.once('exit', () => r()));
      process.kill(-second.npm.pid!, 'SIGINT');
      await done;
    }
  });

  it('a stop while the history is computed saves the chain with its past states, past a short shutdown timeout', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pys-npm-start-'));
    dirs.push(dir);
    // 30 days: a save of its past states takes far longer than a 100 ms shutdown timeout.
    const env = { LOCAL_CHAIN_DAYS: '30', SHUTDOWN_TIMEOUT_MS: '100' };
    const first = startInGroup(dir, env);
    await waitFor(
      () => (first.out().includes('Local chain RPC URL') ? true : undefined),
      120_000,
      'the chain',
    );
    expect(first.out()).not.toContain('Demo ready');
    const exited = new Promise<void>((r) => first.npm.once('exit', () => r()));
    process.kill(-first.npm.pid!, 'SIGTERM');
    await exited;
    const chain = path.join(dir, 'chain');
    expect(existsSync(path.join(chain, 'anvil-state.json'))).toBe(true);
    const deployment = JSON.parse(readFileSync(path.join(chain, 'deployment.json'), 'utf8'));
    expect(deployment.stateReadableFromBlock).toBeUndefined();
    // The history is computed after the reload, from the past states the save kept.
    const second = startInGroup(dir, env);
    try {
      await waitFor(
        () => (second.out().includes('Demo ready') ? true : undefined),
        150_000,
        'the demo after the reload',
      );
      expect(second.out()).not.toMatch(/"level":(50|60)/);
    } finally {
      const done = new Promise<void>((r) => second.npm.once('exit', () => r()));
      process.kill(-second.npm.pid!, 'SIGINT');
      await done;
    }
  });
});
