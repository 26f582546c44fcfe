/**
 * The service entry: opens storage, migrates, and starts the roles the configuration asks for.
 * Returns a handle whose stop() shuts everything down in order: stop accepting requests and jobs,
 * let in-flight ones finish, then close the database.
 */

import { buildApp } from './api/app.ts';
import type { Config } from './config.ts';
import type { Database } from './db/client.ts';
import { deferredDatabase } from './db/deferred.ts';
import { migrate } from './db/migrate.ts';
import { openDatabase } from './db/open.ts';
import type { Logger } from './logger.ts';
import { createRedis, type Redis } from './redis.ts';
import { createWorker, type Job, type Worker } from './worker/runner.ts';

export interface RunningService {
  /** Base URL of the HTTP server when the api role runs. */
  url: string | undefined;
  db: Database;
  stop(): Promise<void>;
}

export async function startService(config: Config, logger: Logger): Promise<RunningService> {
  const opening = openDatabase(config).then(async (db) => {
    try {
      const applied = await migrate(db);
      logger.info({ engine: db.engine, applied }, 'database ready');
      return db;
    } catch (err) {
      await db.close().catch(() => {});
      throw err;
    }
  });
  const db = deferredDatabase(config.DATABASE_URL ? 'postgres' : 'pglite', opening);
  const redis: Redis | undefined = config.REDIS_URL ? createRedis(config.REDIS_URL) : undefined;
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let worker: Worker | undefined;
  try {
    // Listen first: liveness answers while storage initialises; readiness waits for it.
    let url: string | undefined;
    if (config.ROLES.includes('api')) {
      app = await buildApp({ db, logger, redis });
      await app.listen({ host: config.HOST, port: config.PORT });
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.PORT;
      const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
      url = `http://${host}:${port}`;
    }

    await opening;

    if (config.ROLES.includes('worker')) {
      const jobs: Job[] = [];
      worker = createWorker(jobs, logger);
      worker.start();
    }

    let stopping: Promise<void> | undefined;
    return {
      url,
      db,
      stop() {
        stopping ??= (async () => {
          // app.close() stops accepting connections and waits for in-flight requests.
          await Promise.all([app?.close(), worker?.stop()]);
          await Promise.all([db.close(), redis?.quit()]);
        })();
        return stopping;
      },
    };
  } catch (err) {
    await Promise.allSettled([app?.close(), worker?.stop()]);
    await db.close().catch(() => {});
    redis?.disconnect();
    throw err;
  }
}
