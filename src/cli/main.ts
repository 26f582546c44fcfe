/**
 * The operator CLI (`yield-service <command>`). `start` runs the service; the others are one-shot
 * operator commands. Configuration comes from the environment (see the README) for every command.
 */
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config.ts';
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
import { type CliIo, type CommandContext, commandContext, processIo } from './shared.ts';
import { registerWebhookCommand } from './webhook-command.ts';

/** The service in the foreground: this process's signals and exit code are its own. */
async function runStart(ctx: CommandContext): Promise<void> {
  const config = ctx.config();
  const hasParentChannel = Boolean(process.channel);
  // Whoever read our stdout or stderr may be gone (a parent that died, a closed socket): a write
  // then fails with EPIPE, which must neither crash the process nor stop it from shutting down.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  const logger = createLogger(config.LOG_LEVEL);
  const service = await startService(config, logger);
  let shuttingDown = false;
  const shutdown = (reason: NodeJS.Signals | 'chain failure' | 'parent disconnected') => {
    if (shuttingDown) return;
    shuttingDown = true;
    // The hard exit first, before anything that could throw or wait: whatever stop() or the
    // logs do, the process is gone after SHUTDOWN_TIMEOUT_MS. Unref'd so it never holds it alive.
    const force = setTimeout(() => {
      try {
        logger.warn('shutdown timed out; exiting with work in flight');
      } finally {
        process.exit(1);
      }
    }, config.SHUTDOWN_TIMEOUT_MS);
    force.unref();
    const failed = reason === 'chain failure';
    logger.info({ signal: reason }, 'shutting down');
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
  // Started by a Node parent with an IPC channel (the test suites do): the channel closes when the
  // parent dies, however it died, and the service shuts down rather than live on as an orphan with
  // its anvil. A service started any other way has no channel and this never fires.
  if (hasParentChannel) {
    if (process.connected) process.once('disconnect', () => shutdown('parent disconnected'));
    else shutdown('parent disconnected');
  }
  // Printed only once the signal handlers are in place: whoever waits for this line may signal the
  // process at once (under load, a line printed first could be read, and SIGINT sent, before the
  // handler existed — killing the process instead of shutting it down).
  if (service.url) {
    logger.info({ url: service.url }, 'listening');
    process.stdout.write(`Partner yield service listening on ${service.url}\n`);
  }
  if (service.metricsUrl) process.stdout.write(`Metrics on ${service.metricsUrl}\n`);
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

async function runMigrate(ctx: CommandContext): Promise<void> {
  const config = ctx.config();
  const db = await openDatabase(config);
  try {
    const applied = await migrate(db);
    ctx.print(
      applied.length
        ? `Applied ${applied.length} migration(s): ${applied.join(', ')}`
        : 'Database is up to date.',
    );
  } finally {
    await db.close();
  }
}

/**
 * The commander program of every command, writing to `io`. Commander's own refusals (an unknown
 * option, an invalid argument) are written to io.stderr and thrown as CommanderError, never a
 * process.exit: `runCli` turns them into the exit code.
 */
export function buildCli(io: CliIo = processIo()): Command {
  const ctx = commandContext(io);
  // Set before the subcommands exist: commander copies these settings into each one it creates.
  const program = new Command('yield-service')
    .description('Partner yield service: API, chain workers and operator commands')
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
    })
    .exitOverride()
    .showHelpAfterError();
  program
    .command('start')
    .description('run the service (roles from ROLES; default api and worker)')
    .action(() => runStart(ctx));
  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(() => runMigrate(ctx));
  registerChainCommand(program);
  registerPartnerCommand(program, ctx);
  registerProductCommand(program, ctx);
  registerKeyCommand(program, ctx);
  registerWebhookCommand(program, ctx);
  registerPortalCommand(program, ctx);
  registerEmbedCommand(program, ctx);
  return program;
}

/**
 * Runs one command line (the arguments after the program name) and answers its exit code; every
 * failure has been written to io.stderr by then. Long-running commands (`start`, `chain`) answer 0
 * once started and keep the process alive on their own.
 */
export async function runCli(args: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    await buildCli(io).parseAsync([...args], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander wrote its message
    if (err instanceof ConfigError) {
      io.stderr.write(`Configuration error: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    // Operational failures (a server that refuses, a migration that stops) get one clear line;
    // the stack is for programming errors, or on request with LOG_LEVEL=debug.
    const e = err as { code?: unknown; name?: unknown; stack?: unknown } | null;
    const operational = !!e && (typeof e.code === 'string' || e.name === 'MigrationError');
    const debug = io.env.LOG_LEVEL === 'debug' || io.env.LOG_LEVEL === 'trace';
    const text = err instanceof Error ? err.message : String(err);
    const stack = err instanceof Error && err.stack ? err.stack : text;
    io.stderr.write(`yield-service: ${operational && !debug ? text : stack}\n`);
    return 1;
  }
}
