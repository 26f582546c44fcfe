/**
 * `yield-service key create|revoke|list`: partner API keys. The full key is printed once, at
 * creation; afterwards only its prefix and last four characters are ever shown.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { maskKey } from '../api/keys.ts';
import { loadConfig } from '../config.ts';
import { createApiKeysRepo } from '../db/api-keys.ts';
import type { Database } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';
import { createPartnersRepo } from '../db/partners.ts';

class CliError extends Error {}

async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(loadConfig());
  try {
    await migrate(db);
    return await fn(db);
  } finally {
    await db.close();
  }
}

function environment(raw: string): 'live' | 'test' {
  if (raw !== 'live' && raw !== 'test') throw new InvalidArgumentError('must be live or test');
  return raw;
}

async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
}

export function registerKeyCommand(program: Command): void {
  const key = program.command('key').description('partner API keys');

  key
    .command('create')
    .description('create a key for a partner and environment; prints the full key once')
    .requiredOption('--partner <name>', 'partner name')
    .requiredOption('--env <env>', 'live or test', environment)
    .option('--name <label>', 'a label to recognise the key by')
    .option('--json', 'print JSON')
    .action((opts: { partner: string; env: 'live' | 'test'; name?: string; json?: boolean }) =>
      run(() =>
        withDatabase(async (db) => {
          const partner = await createPartnersRepo(db).findByName(opts.partner);
          if (!partner) throw new CliError(`no partner named "${opts.partner}"`);
          const { key: full, record } = await createApiKeysRepo(db).create(
            partner.id,
            opts.env,
            opts.name,
          );
          if (opts.json) {
            process.stdout.write(
              `${JSON.stringify({ id: record.id, partner: partner.name, environment: record.environment, api_key: full })}\n`,
            );
          } else {
            process.stdout.write(
              `Created ${record.id} for ${partner.name} (${record.environment}).\n` +
                `API key (shown once, store it now): ${full}\n`,
            );
          }
        }),
      ),
    );

  key
    .command('revoke <id>')
    .description('revoke a key by its id (key_…); it then answers 401 revoked_api_key')
    .action((id: string) =>
      run(() =>
        withDatabase(async (db) => {
          if (!(await createApiKeysRepo(db).revoke(id))) {
            throw new CliError(`no active key with id ${id}`);
          }
          process.stdout.write(`Revoked ${id}.\n`);
        }),
      ),
    );

  key
    .command('list')
    .description('list keys (prefix and last four characters only)')
    .option('--partner <name>', 'only this partner')
    .option('--json', 'print JSON')
    .action((opts: { partner?: string; json?: boolean }) =>
      run(() =>
        withDatabase(async (db) => {
          let partnerId: string | undefined;
          if (opts.partner) {
            const p = await createPartnersRepo(db).findByName(opts.partner);
            if (!p) throw new CliError(`no partner named "${opts.partner}"`);
            partnerId = p.id;
          }
          const keys = await createApiKeysRepo(db).list(partnerId);
          const rows = keys.map((k) => ({
            id: k.id,
            partner: k.partnerName,
            environment: k.environment,
            key: maskKey(k.prefix, k.last4),
            name: k.name,
            created_at: k.createdAt.toISOString(),
            revoked_at: k.revokedAt?.toISOString() ?? null,
          }));
          if (opts.json) {
            process.stdout.write(`${JSON.stringify(rows)}\n`);
            return;
          }
          for (const r of rows) {
            process.stdout.write(
              `${r.id}  ${r.partner}  ${r.environment}  ${r.key}  ${r.revoked_at ? `revoked ${r.revoked_at}` : 'active'}${r.name ? `  ${r.name}` : ''}\n`,
            );
          }
        }),
      ),
    );
}
