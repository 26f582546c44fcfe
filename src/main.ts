/**
 * The service entry: opens storage, migrates, and starts the roles the configuration asks for.
 * Returns a handle whose stop() shuts everything down in order: stop accepting requests and jobs,
 * let in-flight ones finish, then close the database.
 */

import path from 'node:path';
import { type ChainSettings, readChainsFile } from './chain/chains.ts';
import { isLocalChain } from './chain/signer-settings.ts';
import { type Config, ConfigError } from './config.ts';
import type { Database } from './db/client.ts';
import { deferredDatabase } from './db/deferred.ts';
import { masterKeyDiffers, masterKeyMismatch } from './db/master-key-check.ts';
import { migrate } from './db/migrate.ts';
import { openDatabase } from './db/open.ts';
import { loadEmbedAssets } from './embed/assets.ts';
import { embedPublicUrl } from './embed/public-url.ts';
import type { Logger } from './logger.ts';
import { mailerFromConfig } from './portal/mailer.ts';
import { portalPublicUrl } from './portal/public-url.ts';
import { createRedis, type Redis } from './redis.ts';
import { buildApp, type ChainEntries } from './server/app.ts';
import type { ChainRuntime } from './sync/chain-runtime.ts';
import { type DemoState, waitForDemoHistory } from './sync/demo-readiness.ts';
import { registerStateCollectors } from './telemetry/collectors.ts';
import { type MetricsServer, startMetricsServer } from './telemetry/server.ts';
import { registerTransactionCollectors } from './telemetry/transaction-collectors.ts';
import { configuredAddressPolicy } from './webhooks/address-policy.ts';
import { createConfiguredSender } from './webhooks/from-config.ts';
import { maintenanceSettings } from './webhooks/maintenance.ts';
import { createSecretBox, masterKeyFor } from './webhooks/secret-box.ts';
import type { Worker } from './worker/runner.ts';

export interface RunningService {
  /** Base URL of the HTTP server when the api role runs. */
  url: string | undefined;
  /** URL of the Prometheus endpoint when METRICS_PORT is set. */
  metricsUrl: string | undefined;
  db: Database;
  /**
   * Settles once the chains are up (the local chain is built or reloaded, which can take seconds),
   * the demo is provisioned and the worker runs. The HTTP server does not wait for it: liveness
   * answers from the start. Rejects when the chains cannot be started.
   */
  ready: Promise<ServiceChains>;
  /**
   * Settles once the demo's history is computed, with its last day: from then on every quickstart
   * call returns data (sync/demo-readiness.ts). Undefined when this start has no demo; never
   * settles when the service stops first.
   */
  demoReady: Promise<string | undefined> | undefined;
  stop(): Promise<void>;
}

export interface ServiceChains {
  chains: ChainSettings[];
  /** RPC URL of the embedded local chain, when no CHAINS_FILE is set. */
  localRpcUrl?: string;
}

/**
 * What runs after the HTTP server listens — the chain runtime (anvil, the local chain's build), the
 * demo's provisioning and the worker's jobs — loaded on first use, not with this module: under load
 * loading them through tsx took seconds that liveness would otherwise wait for (#13). They load
 * while storage opens.
 */
function loadBackgroundModules() {
  return Promise.all([
    import('./sync/chain-runtime.ts'),
    import('./sync/demo.ts'),
    import('./sync/demo-credentials.ts'),
    import('./embed/demo.ts'),
    import('./portal/demo.ts'),
    import('./worker/jobs.ts'),
    import('./worker/runner.ts'),
  ]).then(([chainRuntime, demo, demoCredentials, embedDemo, portalDemo, jobs, runner]) => ({
    startChainRuntime: chainRuntime.startChainRuntime,
    provisionDemo: demo.provisionDemo,
    writeDemoCredentials: demoCredentials.writeDemoCredentials,
    refreshDemoAddresses: demoCredentials.refreshDemoAddresses,
    provisionDemoEmbeds: embedDemo.provisionDemoEmbeds,
    refreshDemoPortalAccess: portalDemo.refreshDemoPortalAccess,
    buildWorkerJobs: jobs.buildWorkerJobs,
    createWorker: runner.createWorker,
  }));
}

/**
 * CHAINS_FILE and the signers it names, checked before anything opens or listens: a mistake there
 * (a path that cannot be read, invalid JSON, a missing field, a plaintext key on a public chain, a
 * key file open to others, an unset key variable) is a configuration error, one line and exit code
 * 78 (src/cli/main.ts), like any other setting's; it used to fail the start after the API listened.
 * The signers only on a process with the worker role, the one that signs. Nothing here touches the
 * network: a remote signer and the RPC nodes are reached once the chains start.
 */
async function checkChainsConfig(config: Config): Promise<ChainSettings[]> {
  const file = config.CHAINS_FILE as string;
  try {
    const chains = readChainsFile(file);
    if (config.ROLES.includes('worker')) {
      const { signerAccount } = await import('./chain/signer.ts');
      for (const chain of chains) signerAccount(chain);
    }
    return chains;
  } catch (err) {
    const name = (err as Error | null)?.name;
    if (name === 'ChainsFileError' || name === 'SignerError') {
      throw new ConfigError((err as Error).message);
    }
    throw err;
  }
}

/**
 * The embedded database where the configuration says this is a live setup: refused before anything
 * opens or listens (a configuration error, exit code 78), unless ALLOW_EMBEDDED_DATABASE=true. An
 * operator who forgot DATABASE_URL would otherwise run on a PGlite database in DATA_DIR that only
 * this process can open, with no backups, and that the other processes of the service never see.
 * Live is either of:
 * - CHAINS_FILE names a chain that is not a local development chain (by id, 31337 or 1337, or
 *   marked `"local": true`): real networks, the same line the plaintext-key rule draws;
 * - ROLES runs one role alone: api and worker in separate processes, which cannot share an
 *   embedded database (PGlite is one process's; a second one on the same DATA_DIR is refused by
 *   its lock, and on another machine or container each gets a database of its own).
 * Not: a CHAINS_FILE of development chains (a node of one's own), or both roles without one (the
 * local demo, `npm start`). See docs/maintainers/decisions.md, "The embedded database".
 */
export function embeddedDatabaseRefusal(
  config: Pick<Config, 'DATABASE_URL' | 'ALLOW_EMBEDDED_DATABASE' | 'ROLES' | 'DATA_DIR'>,
  chains: readonly ChainSettings[] | undefined,
): ConfigError | undefined {
  if (config.DATABASE_URL || config.ALLOW_EMBEDDED_DATABASE) return undefined;
  const reasons: string[] = [];
  const live = (chains ?? []).filter((c) => !isLocalChain(c.chainId, c.local));
  if (live.length > 0) {
    const named = live.map((c) => `${c.chainId} (${c.name})`).join(', ');
    reasons.push(
      `CHAINS_FILE names ${live.length === 1 ? 'chain' : 'chains'} ${named}, not a local development chain`,
    );
  }
  const other = config.ROLES.includes('api') ? 'worker' : 'api';
  if (!config.ROLES.includes(other)) {
    reasons.push(
      `ROLES is ${config.ROLES.join(',')}: the ${other} role runs in another process, which cannot share an embedded database`,
    );
  }
  if (reasons.length === 0) return undefined;
  return new ConfigError(
    `DATABASE_URL: not set, while ${reasons.join('; and ')}. This start would run on the embedded PGlite database in ${path.join(config.DATA_DIR, 'pglite')}, which only this process can open and nothing backs up. Set DATABASE_URL to the service's PostgreSQL database (postgres://user:password@host:5432/database); to use the embedded database on purpose (a rehearsal, a test), set ALLOW_EMBEDDED_DATABASE=true.`,
  );
}

export interface StartOptions {
  /**
   * Aborted by a shutdown requested during start-up: a PostgreSQL connection still being made is
   * given up at once (the start then fails) rather than waited for up to its deadline.
   */
  signal?: AbortSignal;
}

export async function startService(
  config: Config,
  logger: Logger,
  options: StartOptions = {},
): Promise<RunningService> {
  const chains = config.CHAINS_FILE ? await checkChainsConfig(config) : undefined;
  const embedded = embeddedDatabaseRefusal(config, chains);
  if (embedded) throw embedded;
  // Read (or created) before anything listens: a bad MASTER_KEY file fails the start, not a request.
  const secretBox = createSecretBox(masterKeyFor(config));
  const connecting = openDatabase(config, { signal: options.signal });
  // PostgreSQL is connected to before anything listens: a wrong or silent DATABASE_URL then fails
  // the start with one line (db/open.ts, within its connect deadline), before a "listening" line
  // could suggest the service is up. A connection takes milliseconds; the migrations, and PGlite's
  // open (seconds on a first run), still run while the server answers liveness.
  if (config.DATABASE_URL) await connecting;
  const opening = connecting.then(async (db) => {
    try {
      const applied = await migrate(db);
      // Another key than the one the stored secrets are under fails the start, rather than every
      // delivery and inbound check once serving (master-key-check.ts).
      const undecryptable = await masterKeyMismatch(db, secretBox);
      if (undecryptable) throw masterKeyDiffers(config, undecryptable);
      logger.info({ engine: db.engine, applied }, 'database ready');
      return db;
    } catch (err) {
      await db.close().catch(() => {});
      throw err;
    }
  });
  const db = deferredDatabase(config.DATABASE_URL ? 'postgres' : 'pglite', opening);
  // One policy for the sender and the portal's destination forms: they refuse the same addresses.
  const addresses = configuredAddressPolicy(config);
  const sender = createConfiguredSender(config, addresses);
  const redis: Redis | undefined = config.REDIS_URL
    ? createRedis(config.REDIS_URL, { logger })
    : undefined;
  const mailer = await mailerFromConfig(config);
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let worker: Worker | undefined;
  // The demo's state for /ready (sync/demo-readiness.ts): computing until its history is written.
  const hasDemo = config.DEMO && !config.CHAINS_FILE;
  let demoState: DemoState = hasDemo ? 'computing_history' : 'off';
  const demoWatch = new AbortController();
  let demoReadyResolve: (through: string | undefined) => void = () => {};
  const demoReady = hasDemo
    ? new Promise<string | undefined>((resolve) => {
        demoReadyResolve = resolve;
      })
    : undefined;
  let metrics: MetricsServer | undefined;
  let unregisterCollectors: (() => void) | undefined;
  try {
    if (config.METRICS_PORT !== undefined) {
      metrics = await startMetricsServer(config.METRICS_HOST, config.METRICS_PORT);
      // Queue depths and the last finished days are shared state: the workers report them.
      if (config.ROLES.includes('worker')) {
        const unregisterState = registerStateCollectors(db);
        const unregisterTransactions = registerTransactionCollectors(db);
        unregisterCollectors = () => {
          unregisterState();
          unregisterTransactions();
        };
      }
      logger.info({ url: metrics.url }, 'metrics listening');
    }
    // Listen first: liveness answers while storage initialises; readiness waits for it.
    let url: string | undefined;
    let provideChains: (chains: ChainEntries) => void = () => {};
    const apiChains = new Promise<ChainEntries>((resolve) => {
      provideChains = resolve;
    });
    let listeningPort: number | undefined;
    if (config.ROLES.includes('api')) {
      app = await buildApp({
        db,
        logger,
        httpMetrics: config.METRICS_PORT !== undefined,
        redis,
        chains: apiChains,
        demo: () => demoState,
        secretBox,
        eventsRetentionDays: config.EVENTS_FEED_RETENTION_DAYS,
        embed: {
          assets: loadEmbedAssets(),
          ratePerMinute: config.EMBED_RATE_LIMIT_PER_MINUTE,
          publicUrl: () => embedPublicUrl(config, listeningPort),
        },
        portal: {
          mailer,
          publicUrl: () => portalPublicUrl(config, listeningPort),
          idleMs: config.PORTAL_SESSION_IDLE_MINUTES * 60_000,
          addresses,
        },
      });
      await app.listen({ host: config.HOST, port: config.PORT });
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.PORT;
      listeningPort = port;
      const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
      url = `http://${host}:${port}`;
    }

    // Loaded while storage opens (a failure surfaces through `ready`, never unhandled).
    const background = loadBackgroundModules();
    background.catch(() => {});

    await opening;

    // Chains after storage, in the background: building a fresh local chain takes seconds and
    // neither liveness nor readiness waits for it.
    let runtime: ChainRuntime | undefined;
    let stopRequested = false;
    // A stop during the local chain's first build ends the build rather than wait a minute for it.
    const chainStart = new AbortController();
    const ready = (async (): Promise<ServiceChains> => {
      const {
        startChainRuntime,
        provisionDemo,
        writeDemoCredentials,
        refreshDemoAddresses,
        provisionDemoEmbeds,
        refreshDemoPortalAccess,
        buildWorkerJobs,
        createWorker,
      } = await background;
      runtime = await startChainRuntime(config, logger, { signal: chainStart.signal });
      const started = runtime;
      provideChains(
        started.chains.map((c) => ({
          chainId: c.chainId,
          name: c.name,
          evm: c.evm,
          client: started.clients.get(c.chainId)!,
        })),
      );
      const local = runtime.local;
      if (!stopRequested && config.DEMO && local) {
        const client = runtime.clients.get(local.deployment.chainId)!;
        const demo = await provisionDemo({
          db,
          logger,
          deployment: local.deployment,
          client,
          secretBox,
        });
        if (demo.provisioned) {
          const baseUrl = url ?? `http://${config.HOST}:${config.PORT}`;
          const partners = await provisionDemoEmbeds(
            db,
            demo.credentials,
            embedPublicUrl(config, Number(new URL(baseUrl).port) || config.PORT),
          );
          const file = writeDemoCredentials(config.DATA_DIR, {
            base_url: baseUrl,
            rpc_url: local.anvil.rpcUrl,
            partners,
          });
          logger.info({ file }, 'demo credentials written');
        }
        // This start's addresses, then a fresh one-time portal link per demo partner
        // (src/portal/demo.ts), at every start.
        if (url && !stopRequested) {
          refreshDemoAddresses(config.DATA_DIR, { base_url: url, rpc_url: local.anvil.rpcUrl });
          await refreshDemoPortalAccess({
            db,
            dataDir: config.DATA_DIR,
            publicUrl: portalPublicUrl(config, listeningPort),
          });
        }
        // Not awaited: the worker below computes the history being waited for.
        void waitForDemoHistory({
          db,
          chainId: local.deployment.chainId,
          logger,
          signal: demoWatch.signal,
        }).then((through) => {
          if (demoWatch.signal.aborted) return;
          demoState = 'ready';
          logger.info({ through }, 'demo ready: history computed');
          demoReadyResolve(through);
        });
      } else demoState = 'off';
      if (!stopRequested && config.ROLES.includes('worker')) {
        const jobs = buildWorkerJobs({
          db,
          logger,
          runtime,
          webhooks: { sender, secretBox, maintenance: maintenanceSettings(config) },
          intervals: {
            lifecycleMs: config.CHAIN_POLL_INTERVAL_MS,
            indexerMs: config.CHAIN_POLL_INTERVAL_MS,
            metricsMs: config.DAILY_METRICS_INTERVAL_MS,
          },
        });
        worker = createWorker(jobs, logger);
        worker.start();
      }
      return { chains: runtime.chains, localRpcUrl: local?.anvil.rpcUrl };
    })();
    ready.catch(() => {}); // the caller handles it through `ready`; never an unhandled rejection

    let stopping: Promise<void> | undefined;
    return {
      url,
      metricsUrl: metrics?.url,
      db,
      ready,
      demoReady,
      stop() {
        stopping ??= (async () => {
          stopRequested = true;
          chainStart.abort();
          demoWatch.abort();
          // Work stuck on a peer that will not answer (a database connection gone silent, an RPC
          // node that accepts and never replies) would hold the stop until the hard exit. Past
          // half the shutdown timeout what is still in flight is cut or left behind, and the stop
          // goes on: HTTP connections are closed (their clients retry), database connections
          // destroyed (their queries reject), and jobs still running are no longer waited for:
          // their leases expire and another worker redoes their work, as after a kill (every job
          // is idempotent or claims under a lease; docs/maintainers/operations.md).
          let cutReached: () => void = () => {};
          const cutting = new Promise<void>((resolve) => {
            cutReached = resolve;
          });
          const cut = setTimeout(() => {
            logger.warn(
              { afterMs: config.SHUTDOWN_TIMEOUT_MS / 2 },
              'shutdown: cutting the connections of work still in flight and leaving running jobs to their leases',
            );
            app?.server.closeAllConnections();
            db.interrupt?.();
            cutReached();
          }, config.SHUTDOWN_TIMEOUT_MS / 2);
          cut.unref();
          // app.close() stops accepting connections and waits for in-flight requests. A chain
          // still loading is waited for, then stopped; a first build is given up (above).
          await Promise.all([app?.close(), ready.catch(() => {})]);
          await Promise.race([worker?.stop(), cutting]);
          await Promise.race([sender.close(), cutting]);
          mailer.close();
          // The demo's chain keeps the states of past blocks only while its history is still to be
          // computed (the metrics read each past day's boundary); then the save stays small.
          await runtime?.stop({ historicalStates: demoState !== 'ready' });
          await metrics?.close();
          unregisterCollectors?.();
          // QUIT on a connection that is already closed rejects ("Connection is closed."): nothing
          // is left to close then, and a clean stop must not end as a failed one (#33).
          await Promise.all([db.close(), redis?.quit().catch(() => redis.disconnect())]);
          clearTimeout(cut);
        })();
        return stopping;
      },
    };
  } catch (err) {
    await Promise.allSettled([app?.close(), worker?.stop(), sender.close(), metrics?.close()]);
    unregisterCollectors?.();
    await db.close().catch(() => {});
    redis?.disconnect();
    throw err;
  }
}
