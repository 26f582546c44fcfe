/**
 * `yield-service partner create|list`, and what every database-writing operator command shares:
 * configuration, an open and migrated database, one-line errors with a non-zero exit.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import type { Database } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';
import { createPartnersRepo } from '../db/partners.ts';
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

function partnerName(raw: string): string {
  const name = raw.trim();
  if (name.length === 0 || name.length > 100) {
    throw new InvalidArgumentError('a name of 1 to 100 characters');
  }
  return name;
}

export function registerPartnerCommand(program: Command): void {
  const partner = program.command('partner').description('manage partners');

  partner
    .command('create')
    .description('create a partner (both its live and test environments); prints its id')
    .requiredOption('--name <name>', 'display name, unique', partnerName)
    .option('--json', 'print the partner as JSON', false)
    .action(async (opts: { name: string; json: boolean }) => {
      const config = commandConfig();
      const created = await withDatabase(config, async (db) => {
        const repo = createPartnersRepo(db);
        if (await repo.findByName(opts.name)) {
          throw new CommandError(`a partner named "${opts.name}" already exists`, 'exists');
        }
        return repo.create(opts.name);
      });
      if (opts.json) {
        printJson({ id: created.id, name: created.name, created_at: created.createdAt });
      } else print(created.id);
    });

  partner
    .command('list')
    .description('list partners')
    .option('--json', 'print JSON', false)
    .action(async (opts: { json: boolean }) => {
      const config = commandConfig();
      const partners = await withDatabase(config, (db) => createPartnersRepo(db).list());
      if (opts.json) {
        printJson(partners.map((p) => ({ id: p.id, name: p.name, created_at: p.createdAt })));
        return;
      }
      if (partners.length === 0) return print('No partners.');
      print(
        table([
          ['ID', 'NAME', 'CREATED'],
          ...partners.map((p) => [p.id, p.name, p.createdAt.toISOString()]),
        ]),
      );
    });
}
