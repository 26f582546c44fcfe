/**
 * What every operator command shares, passed in rather than reached for: where output goes, the
 * environment the configuration is read from and, optionally, an open database. The bin passes the
 * process's own (`processIo`); a test passes strings to collect and its test database, and runs the
 * very same commander program in its own process (`runCli` in main.ts).
 */

import { type Config, loadConfig } from '../config.ts';
import type { Database } from '../db/client.ts';
import { BaseError } from '../errors.ts';

/** An operator mistake or refusal: printed as one line by `runCli`, exit code 1. */
export class CommandError extends BaseError {
  override name = 'CommandError';
  constructor(message: string, code = 'command_failed') {
    super(code, message);
  }
}

export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Where the configuration is read from (see config.ts). */
  env: NodeJS.ProcessEnv;
  /**
   * An open, migrated database the commands borrow (never close). Without it each command opens
   * the configured one — on the embedded database taking its lock — migrates it and closes it.
   */
  database?: Database;
}

/** The bin's: this process's streams and environment, read when used. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

export interface CommandContext {
  readonly io: CliIo;
  /** The configuration; a ConfigError ends the command with exit code 78 (see runCli). */
  config(): Config;
  withDatabase<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T>;
  print(text: string): void;
  printJson(value: unknown): void;
}

export function commandContext(io: CliIo): CommandContext {
  const print = (text: string) => {
    io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  };
  return {
    io,
    config: () => loadConfig(io.env),
    async withDatabase(config, fn) {
      if (io.database) return fn(io.database);
      // On the embedded database this takes its lock: refused (one line, exit 1) while the service
      // or another command has it open (db/pglite-lock.ts).
      // Loaded here, not with this module: help and refused arguments need no database driver.
      const [{ openDatabase }, { migrate }] = await Promise.all([
        import('../db/open.ts'),
        import('../db/migrate.ts'),
      ]);
      const db = await openDatabase(config);
      try {
        await migrate(db);
        return await fn(db);
      } finally {
        await db.close();
      }
    },
    print,
    printJson: (value) => print(JSON.stringify(value, null, 2)),
  };
}

/** Pads columns of a small table for the terminal. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return '';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
