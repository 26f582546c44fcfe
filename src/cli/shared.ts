/**
 * What every database-writing operator command shares: configuration, an open and migrated
 * database (refused while another process holds the embedded one), one-line errors with a non-zero
 * exit, and terminal output helpers.
 */
import { type Config, ConfigError, loadConfig } from '../config.ts';
import type { Database } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';

/** An operator mistake or refusal: printed as one line by the bin, exit code 1. */
export class CommandError extends Error {
  override name = 'CommandError';
  readonly code: string;
  constructor(message: string, code = 'command_failed') {
    super(message);
    this.code = code;
  }
}

export function commandConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(78); // EX_CONFIG, as `start`
    }
    throw err;
  }
}

export async function withDatabase<T>(
  config: Config,
  fn: (db: Database) => Promise<T>,
): Promise<T> {
  // On the embedded database this takes its lock: refused (one line, exit 1) while the service or
  // another command has it open (db/pglite-lock.ts).
  const db = await openDatabase(config);
  try {
    await migrate(db);
    return await fn(db);
  } finally {
    await db.close();
  }
}

export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
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
