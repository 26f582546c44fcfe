/**
 * Runs a CLI command in this process: the same commander program the bin runs (`runCli`), with its
 * output collected and, when given, the test's open database passed in (borrowed, not closed). A
 * spawned bin costs seconds per call (tsx, PGlite open, migrate); this costs milliseconds. Keep one
 * spawned smoke test (helpers/process.ts) per command group for the bin itself.
 */
import { runCli } from '../../src/cli/main.ts';
import type { Database } from '../../src/db/client.ts';

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

export interface InProcessCli {
  /** The environment the configuration is read from; nothing of the test process's leaks in. */
  env: NodeJS.ProcessEnv;
  database?: Database;
}

export async function runCliInProcess(args: string[], options: InProcessCli): Promise<CliResult> {
  let out = '';
  let err = '';
  const code = await runCli(args, {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env },
    database: options.database,
  });
  return { code, out, err };
}
