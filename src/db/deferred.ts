/**
 * A Database whose queries wait until the real one is open and migrated. It lets the HTTP server
 * listen (and answer the liveness probe) while PGlite initialises, which takes seconds on a first
 * run; readiness and data endpoints wait for storage, bounded by their own timeouts.
 */
import type { Database } from './client.ts';

export function deferredDatabase(engine: Database['engine'], ready: Promise<Database>): Database {
  // Rejections surface through startService; this handle must not add an unhandled one.
  ready.catch(() => {});
  let opened: Database | undefined;
  ready.then(
    (db) => {
      opened = db;
    },
    () => {},
  );
  return {
    engine,
    query: async (sql, params) => (await ready).query(sql, params),
    exec: async (sql) => (await ready).exec(sql),
    copyFrom: async (table, columns, text) => (await ready).copyFrom(table, columns, text),
    transaction: async (fn) => (await ready).transaction(fn),
    interrupt: () => opened?.interrupt?.(),
    close: async () => {
      const db = await ready.catch(() => undefined);
      await db?.close();
    },
  };
}
