/**
 * The operator CLI (`yield-service <command>`). `start` runs the service; the others are one-shot
 * operator commands. Configuration comes from the environment (see the README) for every command.
 */
import { Command } from 'commander';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { migrate } from '../db/migrate.ts';
import { openDatabase } from '../db/open.ts';
import { createLogger } from '../logger.ts';
import { startService } from '../main.ts';
import { registerChainCommand } from './chain-command.ts';
import { registerEmbedCommand } from './embed-command.ts';
import { registerKeyCommand } from './key-command.ts';
import { registerPartnerCommand } from './partner-command.ts';
import { registerPortalCommand } from './portal-command.ts';
import { registerProductCommand } from './product-command.ts';
import { registerWebhookCommand } from './webhook-command.ts';

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}

async function runStart(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger(config.LOG_LEVEL);
  const service = await startService(config, logger);
  let shuttingDown = false;
  const shutdown = (signal: NodeJS.Signals | 'chain failure') => {
    if (shuttingDown) return;
    shuttingDown = true;
    const failed = signal === 'chain failure';
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('shutdown timed out; exiting with work in flight');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    force.unref();
    service.stop().then(
      () => {
        logger.info('shutdown complete');
        process.exit(failed ? 1 : 0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  // Printed only once the signal handlers are in place: whoever waits for this line may signal the
  // process at once (under load, a line printed first could be read, and SIGINT sent, before the
  // handler existed — killing the process instead of shutting it down).
  if (service.url) {
    logger.info({ url: service.url }, 'listening');
    process.stdout.write(`Partner yield service listening on ${service.url}\n`);
  }
  service.ready.then(
    (ready) => {
      if (ready.localRpcUrl) {
        process.stdout.write(`Local chain RPC URL ${ready.localRpcUrl}\n`);
      }
    },
    (err: unknown) => {
      logger.error({ err }, 'chains failed to start');
      process.stderr.write(
        `yield-service: chains failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
      );
      shutdown('chain failure');
    },
  );
}

async function runMigrate(): Promise<void> {
  const config = configOrExit();
  const db = await openDatabase(config);
  try {
    const applied = await migrate(db);
    process.stdout.write(
      applied.length
        ? `Applied ${applied.length} migration(s): ${applied.join(', ')}\n`
        : 'Database is up to date.\n',
    );
  } finally {
    await db.close();
  }
}

export function buildCli(): Command {
  const program = new Command('yield-service')
    .description('Partner yield service: API, chain workers and operator commands')
    .showHelpAfterError();
  program
    .command('start')
    .description('run the service (roles from ROLES; default api and worker)')
    .action(runStart);
  program.command('migrate').description('apply pending database migrations').action(runMigrate);
  registerChainCommand(program);
  registerPartnerCommand(program);
  registerProductCommand(program);
  registerKeyCommand(program);
  registerWebhookCommand(program);
  registerPortalCommand(program);
  registerEmbedCommand(program);
  return program;
}

export async function runCli(argv: readonly string[]): Promise<void> {
  await buildCli().parseAsync([...argv]);
}
