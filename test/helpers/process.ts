/** Runs the real CLI (`bin/yield-service.mjs`) as a child process, as an operator would. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/yield-service.mjs', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv): Spawned {
  // Start from a clean environment so the developer's own settings never leak into a test.
  const base = { PATH: process.env.PATH, HOME: process.env.HOME };
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...base, ...env },
    // The IPC channel closes when this test process dies, however it dies: `start` then shuts
    // down instead of living on, with its anvil, as an orphan (src/cli/main.ts).
    stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  // 'exit' can come before the last lines written to the pipes are read: settle once both pipes
  // ended too (what the process printed last, e.g. its shutdown lines, is then in stdout()), or 2 s
  // after the exit should a pipe stay open (held by a grandchild) or be destroyed by the test.
  const ended = (stream: NodeJS.ReadableStream | null) =>
    new Promise<void>((resolve) => {
      if (!stream || (stream as { readableEnded?: boolean }).readableEnded) return resolve();
      stream.once('end', resolve);
      stream.once('close', resolve);
    });
  const pipesEnded = Promise.all([ended(child.stdout), ended(child.stderr)]);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      const grace = new Promise<void>((r) => setTimeout(r, 2000).unref());
      void Promise.race([pipesEnded, grace]).then(() => resolve({ code, signal }));
    }),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

export async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Direct children of a process, from /proc (Linux): a service's anvil, for instance. */
export function childPids(pid: number, command?: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      if (ppid === pid && (command === undefined || comm === command)) out.push(Number(entry));
    } catch {
      // the process ended while we read
    }
  }
  return out;
}
