/**
 * What every database-writing operator command shares: configuration, an open and migrated
 * database (refused while the service holds the embedded one), one-line errors with a non-zero
 * exit, and terminal output helpers.
 */
import { type Config, ConfigError, loadConfig } from '../config.ts';
import type { Database } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';
import { configuredChains } from '../sync/chain-runtime.ts';

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

/**
 * PGlite is single-process: a second process opening the same directory corrupts it. When the
 * embedded database is used and the local chain of this DATA_DIR answers, the service (which owns
 * both) is running, so refuse rather than write under it.
 */
async function assertEmbeddedDatabaseFree(config: Config): Promise<void> {
  if (config.DATABASE_URL) return;
  const { local } = configuredChains(config);
  if (!local) return;
  const answered = await fetch(local.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    signal: AbortSignal.timeout(1_000),
  }).then(
    (r) => r.ok,
    () => false,
  );
  if (answered) {
    throw new CommandError(
      `the service is running on ${config.DATA_DIR} with the embedded database, which only one process may open; stop it first, or use DATABASE_URL (PostgreSQL)`,
      'database_in_use',
    );
  }
}

export async function withDatabase<T>(
  config: Config,
  fn: (db: Database) => Promise<T>,
): Promise<T> {
  await assertEmbeddedDatabaseFree(config);
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
