/**
 * The operator CLI (`yield-service <command>`). `start` runs the service; the others are one-shot
 * operator commands. Configuration comes from the environment (see the README) for every command.
 */
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { hasUnsavedChain } from '../chain/local/saving.ts';
import { ConfigError } from '../config.ts';
import { createLogger, drainLogs } from '../logger.ts';
import type { RunningService } from '../main.ts';
import { scrubSecrets } from '../url-secrets.ts';
import { type CliIo, type CommandContext, commandContext, processIo } from './shared.ts';

/**
 * Each command group's module, loaded only when one of its commands runs (all of them for help or
 * an unknown command): through tsx, loading every group — viem, the chain and lifecycle modules,
 * the service itself — took 3–4 s per invocation on an idle machine and 10–30 s under load, before
 * `start` could listen or a one-shot command could begin (#13). Listed in the order help shows them.
 */
const COMMAND_GROUPS: Record<string, (program: Command, ctx: CommandContext) => Promise<void>> = {
  chain: async (program) => (await import('./chain-command.ts')).registerChainCommand(program),
  partner: async (program, ctx) =>
    (await import('./partner-command.ts')).registerPartnerCommand(program, ctx),
  product: async (program, ctx) =>
    (await import('./product-command.ts')).registerProductCommand(program, ctx),
  key: async (program, ctx) => (await import('./key-command.ts')).registerKeyCommand(program, ctx),
  webhook: async (program, ctx) =>
    (await import('./webhook-command.ts')).registerWebhookCommand(program, ctx),
  portal: async (program, ctx) =>
    (await import('./portal-command.ts')).registerPortalCommand(program, ctx),
  embed: async (program, ctx) =>
    (await import('./embed-command.ts')).registerEmbedCommand(program, ctx),
  tx: async (program, ctx) => (await import('./tx-command.ts')).registerTxCommand(program, ctx),
  rehearse: async (program, ctx) =>
    (await import('./rehearse-command.ts')).registerRehearseCommand(program, ctx, runCli),
};

/** The service in the foreground: this process's signals and exit code are its own. */
async function runStart(ctx: CommandContext): Promise<void> {
  const config = ctx.config();
  const hasParentChannel = Boolean(process.channel);
  // Whoever read our stdout or stderr may be gone (a parent that died, a closed socket): a write
  // then fails with EPIPE, which must neither crash the process nor stop it from shutting down.
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  const logger = createLogger(config.LOG_LEVEL);
  // The service, once started. The signal handlers below exist before any start-up work (loading
  // the service, opening storage, migrating): a SIGTERM during start-up used to kill the process
  // by the signal, since Node's default action applied until the handlers were installed (#33).
  // A signal then waits for the start-up to finish and stops what it started.
  let provide: (service: RunningService | undefined) => void = () => {};
  const started = new Promise<RunningService | undefined>((resolve) => {
    provide = resolve;
  });
  let shuttingDown = false;
  let startFailed = false;
  // Gives up a database connection still being made (src/db/open.ts): a silent server would
  // otherwise hold the stop until the connect deadline.
  const startup = new AbortController();
  const shutdown = (reason: NodeJS.Signals | 'chain failure' | 'parent disconnected') => {
    if (shuttingDown) return;
    shuttingDown = true;
    startup.abort();
    // The hard exit first, before anything that could throw or wait: whatever stop() or the
    // logs do, the process is gone after SHUTDOWN_TIMEOUT_MS. Unref'd so it never holds it alive.
    // Except for a local chain not saved yet: the stop goes on to save it (past half the timeout
    // it cuts what is in flight), a bounded write (about 10 s at most for the 200-day demo with
    // its past states) that the exit would cut short and lose. Up to a minute more.
    let waitedForSave = 0;
    const hardExit = () => {
      if (hasUnsavedChain() && waitedForSave < 60_000) {
        if (waitedForSave === 0) logger.warn('shutdown: waiting for the local chain to be saved');
        waitedForSave += 1_000;
        setTimeout(hardExit, 1_000).unref();
        return;
      }
      try {
        logger.warn('shutdown timed out; exiting with work in flight');
      } finally {
        process.exit(1);
      }
    };
    setTimeout(hardExit, config.SHUTDOWN_TIMEOUT_MS).unref();
    const failed = reason === 'chain failure';
    logger.info({ signal: reason }, 'shutting down');
    started
      .then((service) => service?.stop())
      .then(
        async () => {
          logger.info('shutdown complete');
          await drainLogs();
          process.exit(failed || startFailed ? 1 : 0);
        },
        async (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          await drainLogs();
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
  let service: RunningService;
  try {
    const { startService } = await import('../main.ts');
    service = await startService(config, logger, { signal: startup.signal });
  } catch (err) {
    // Nothing to stop: a shutdown under way exits 1 once the failure is reported (runCli).
    startFailed = true;
    provide(undefined);
    // The log lines written so far (a "Server listening" among them) go out before the failure's
    // line, which stays the last one the operator reads.
    await drainLogs();
    throw err;
  }
  provide(service);
  // Stopping already: nothing more to announce or to start.
  if (shuttingDown) return;
  // Printed only once the signal handlers are in place: whoever waits for this line may signal the
  // process at once (under load, a line printed first could be read, and SIGINT sent, before the
  // handler existed — killing the process instead of shutting it down).
  if (service.url) {
    logger.info({ url: service.url }, 'listening');
    process.stdout.write(`Partner yield service listening on ${service.url}\n`);
  }
  if (service.metricsUrl) process.stdout.write(`Metrics on ${service.metricsUrl}\n`);
  service.demoReady?.then((through) => {
    if (shuttingDown) return;
    process.stdout.write(
      `Demo ready: history computed through ${through ?? 'today'}; every quickstart call returns data (keys in ${path.join(config.DATA_DIR, 'demo-credentials.json')})\n`,
    );
  });
  service.ready.then(
    (ready) => {
      if (ready.localRpcUrl) {
        process.stdout.write(`Local chain RPC URL ${ready.localRpcUrl}\n`);
      }
    },
    (err: unknown) => {
      // Stopped during the first build of the local chain: what was asked for, not a failure.
      // (By name: this module loads the chain code only once the signal handlers are in place.)
      if (shuttingDown && err instanceof Error && err.name === 'LocalChainBuildStopped') {
        logger.info(err.message);
        return;
      }
      logger.error({ err }, 'chains failed to start');
      process.stderr.write(
        scrubSecrets(
          `yield-service: chains failed to start: ${err instanceof Error ? err.message : String(err)}\n`,
        ),
      );
      shutdown('chain failure');
    },
  );
}

async function runMigrate(ctx: CommandContext): Promise<void> {
  const config = ctx.config();
  const [{ openDatabase, describeDatabase }, { migrate }] = await Promise.all([
    import('../db/open.ts'),
    import('../db/migrate.ts'),
  ]);
  const db = await openDatabase(config);
  try {
    const applied = await migrate(db);
    // Which database, first: a release step whose DATABASE_URL was not injected would otherwise
    // "succeed" on a new embedded database in ./data.
    const target = describeDatabase(config);
    ctx.print(
      applied.length
        ? `Applied ${applied.length} migration(s) to ${target}: ${applied.join(', ')}`
        : `Database is up to date: ${target}.`,
    );
  } finally {
    await db.close();
  }
}

/**
 * The commander program for one command line, writing to `io`: `start`, `migrate` and the command
 * group `args` names (every group when it names none, or one that does not exist, so help and
 * commander's suggestions list them all). Commander's own refusals (an unknown option, an invalid
 * argument) are written to io.stderr and thrown as CommanderError, never a process.exit: `runCli`
 * turns them into the exit code.
 */
export async function buildCli(
  io: CliIo = processIo(),
  args: readonly string[] = [],
): Promise<Command> {
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
  const first = args[0];
  if (first === 'start' || first === 'migrate') return program;
  const named = first !== undefined ? COMMAND_GROUPS[first] : undefined;
  if (named && Object.hasOwn(COMMAND_GROUPS, first as string)) await named(program, ctx);
  else for (const register of Object.values(COMMAND_GROUPS)) await register(program, ctx);
  return program;
}

/**
 * Runs one command line (the arguments after the program name) and answers its exit code; every
 * failure has been written to io.stderr by then. Long-running commands (`start`, `chain`) answer 0
 * once started and keep the process alive on their own.
 */
export async function runCli(args: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    await (await buildCli(io, args)).parseAsync([...args], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander wrote its message
    if (err instanceof ConfigError) {
      io.stderr.write(`Configuration error: ${err.message}\n`);
      return 78; // EX_CONFIG
    }
    // Operational failures (a server that refuses, a migration that stops, a chain that does not
    // answer) get one clear line; the stack is for programming errors, or on request with
    // LOG_LEVEL=debug. A chain's error is viem's short message: its full message and details name
    // the provider's URL.
    const e = err as { code?: unknown; name?: unknown; stack?: unknown; shortMessage?: unknown };
    const chain = !!e && typeof e.shortMessage === 'string';
    const operational = !!e && (typeof e.code === 'string' || e.name === 'MigrationError' || chain);
    const debug = io.env.LOG_LEVEL === 'debug' || io.env.LOG_LEVEL === 'trace';
    const text = chain
      ? `a chain call failed: ${e.shortMessage as string} (check the chain's rpc_urls and its provider; LOG_LEVEL=debug shows more)`
      : err instanceof Error
        ? err.message
        : String(err);
    const stack = err instanceof Error && err.stack ? err.stack : text;
    // Provider keys and passwords never reach the terminal, whatever the error carried: the
    // configured URLs' secret parts are registered when they are read (url-secrets.ts).
    io.stderr.write(scrubSecrets(`yield-service: ${operational && !debug ? text : stack}\n`));
    return 1;
  }
}
