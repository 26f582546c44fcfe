/**
 * The database client factory: PostgreSQL through a `pg` pool when a URL is given, embedded PGlite
 * otherwise. Both are wrapped in one small interface so repositories never know which engine runs,
 * and both return the same JavaScript types for the same SQL types:
 *   int8 and numeric → string (exact; callers turn them into bigint), date → 'YYYY-MM-DD',
 *   timestamptz → Date, json/jsonb → parsed value.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { from as copyFromStdin } from 'pg-copy-streams';
import { trackPool } from '../telemetry/metrics.ts';
import { lockDataDir } from './pglite-lock.ts';

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<T>>;
  /** Runs a script of several statements, without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Bulk load: `COPY table (columns) FROM STDIN` in PostgreSQL's text format (tab-separated, one row
   * per line; see copyText in db/copy-text.ts), the fastest way either engine takes many rows
   * (no per-row parse of SQL or JSON). Returns the number of rows loaded.
   */
  copyFrom(table: string, columns: readonly string[], text: string): Promise<number>;
}

export interface Database extends Queryable {
  readonly engine: 'pglite' | 'postgres';
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * PGlite only: calls `onNotify` for each notification on `channel` (a trigger's pg_notify),
   * before the call that committed it resolves, as every writer of an embedded database runs in
   * this process. Resolves to a function that stops listening. PostgreSQL has no such method:
   * there a notification arrives later, on another connection, from any process.
   */
  listen?(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  /**
   * PostgreSQL only: destroys every open connection, so that queries in flight reject at once
   * (their work fails and is retried by its caller) instead of waiting on a connection that may
   * never answer. For a shutdown that cannot wait any longer; the pool stays usable.
   */
  interrupt?(): void;
  close(): Promise<void>;
}

/** fn in one transaction when db can open one; as is when db already is one (a transaction). */
export function inTransaction<T>(db: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return 'transaction' in db ? (db as Database).transaction(fn) : fn(db);
}

/** One round trip: whether the database answers (the readiness probe). */
export async function pingDatabase(db: Queryable): Promise<void> {
  await db.query('SELECT 1');
}

export type DatabaseOptions =
  | {
      engine: 'postgres';
      url: string;
      poolMax?: number;
      preparedStatements?: boolean;
      /**
       * How long a new connection may take to be ready for queries (TCP, TLS, authentication)
       * before it fails with "timeout expired": a server that accepts and never answers (a wrong
       * port, a hung PostgreSQL) must not hold the caller forever. Waiting for a free pool slot is
       * not bounded by it. Default 10 s.
       */
      connectTimeoutMs?: number;
    }
  | { engine: 'pglite'; dataDir?: string };

/** Identifiers are the callers' constants, never input; quoting keeps them exact anyway. */
function copySql(table: string, columns: readonly string[], source: string): string {
  const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
  return `COPY ${ident(table)} (${columns.map(ident).join(', ')}) FROM ${source}`;
}

const OID = { INT8: 20, NUMERIC: 1700, DATE: 1082 } as const;
const asText = (value: string) => value;

export async function createDatabase(options: DatabaseOptions): Promise<Database> {
  return options.engine === 'postgres' ? createPostgres(options) : createPglite(options.dataDir);
}

/**
 * Names for server-side prepared statements, shared by a pool's connections. A named statement is
 * parsed (and, once PostgreSQL's plan cache settles, planned) once per connection instead of on
 * every call; postgres.js prepares every statement by default and pgJDBC after five uses, for the
 * same reason. Bounded: only statements with parameters (the ones sent with the extended protocol),
 * of moderate length, and at most MAX_NAMED distinct texts, since a multi-row INSERT whose text
 * varies with its row count would otherwise leave a statement per count on every connection.
 */
const MAX_NAMED = 500;
const MAX_NAMED_LENGTH = 8_000;

/** PostgreSQL's refusal to run a prepared statement whose result columns a DDL change altered. */
const isStalePlan = (err: unknown) =>
  (err as { code?: unknown }).code === '0A000' &&
  /cached plan must not change result type/.test((err as Error).message);

interface StatementNamer {
  /** The statement's name, or undefined to send it unprepared. */
  nameOf(sql: string): string | undefined;
  /**
   * Starts new names for every statement: PostgreSQL keeps refusing a stale prepared statement on
   * each connection that holds it, so the next runs prepare afresh under a name no connection has.
   */
  renew(): void;
}

function statementNamer(): StatementNamer {
  const names = new Map<string, string>();
  let generation = 0;
  return {
    nameOf(sql) {
      const known = names.get(sql);
      if (known !== undefined || names.size >= MAX_NAMED || sql.length > MAX_NAMED_LENGTH) {
        return known;
      }
      const hash = createHash('sha256').update(sql).digest('base64url').slice(0, 24);
      const name = `pys${generation}_${hash}`;
      names.set(sql, name);
      return name;
    },
    renew() {
      generation++;
      names.clear();
    },
  };
}

async function createPostgres(options: {
  url: string;
  poolMax?: number;
  preparedStatements?: boolean;
  connectTimeoutMs?: number;
}): Promise<Database> {
  // Per-pool type parsers: the global pg.types registry would leak into other pools and libraries.
  const textTypes = new Set<number>([OID.INT8, OID.NUMERIC, OID.DATE]);
  // The connect deadline on each client, not on the pool: pg-pool would apply its own
  // connectionTimeoutMillis to waiting for a free slot too, failing queries that merely queue
  // behind a busy pool.
  const connectionTimeoutMillis = options.connectTimeoutMs ?? 10_000;
  class TimedClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis });
    }
  }
  const pool = new pg.Pool({
    Client: TimedClient as unknown as new () => pg.ClientBase,
    connectionString: options.url,
    max: options.poolMax ?? 10,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        textTypes.has(oid)
          ? asText
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // Nor a client in use: pg-pool's own query path listens for its client's 'error' once, and a
  // terminated backend can emit two (the FATAL message, then the socket's end), the second with no
  // listener, which ended the worker (test/db/worker-connection-drops.test.ts, under load). Every
  // client keeps this no-op listener for its whole life; a failed query still rejects on its own.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const poolMax = options.poolMax ?? 10;
  const untrackPool = trackPool(() => ({
    total: pool.totalCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount,
    max: poolMax,
  }));
  /**
   * A client checked out of the pool (a transaction, a COPY) has no 'error' listener of the pool's:
   * a connection dropped under it (a PostgreSQL restart, a terminated backend) would emit an
   * unhandled 'error' event and end the process. Listen while it is out; the query in flight
   * rejects on its own, and a broken client is destroyed on release instead of reused.
   */
  const checkout = async <T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error) => {
      broken = err;
    };
    client.on('error', onError);
    try {
      return await fn(client);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  };
  const copy = async (
    client: pg.PoolClient,
    table: string,
    columns: readonly string[],
    text: string,
  ): Promise<number> => {
    const stream = client.query(copyFromStdin(copySql(table, columns, 'STDIN')));
    await pipeline(Readable.from([Buffer.from(text)]), stream);
    return stream.rowCount ?? 0;
  };
  const namer: StatementNamer =
    options.preparedStatements === false
      ? { nameOf: () => undefined, renew: () => {} }
      : statementNamer();
  const run = async <T>(
    client: pg.Pool | pg.PoolClient,
    sql: string,
    params: readonly unknown[] | undefined,
    name?: string,
  ) => {
    const r = await (name === undefined
      ? client.query(sql, params as unknown[] | undefined)
      : client.query({ name, text: sql, values: params as unknown[] }));
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  };
  /**
   * Outside transactions, statements with parameters are prepared. A migration that changes a
   * table's columns (another process's, in a rolling deploy) makes PostgreSQL refuse every later
   * run of a prepared `SELECT *` on it ("cached plan must not change result type"), on every
   * connection that prepared it. The refused run is repeated under a new name, and every statement
   * is named anew from then on, so each is prepared again with the new columns; no caller sees
   * the refusal. Inside a transaction it would abort the whole transaction, so statements there
   * are not prepared.
   */
  const runPrepared = async <T>(sql: string, params?: readonly unknown[]) => {
    const name = params && params.length > 0 ? namer.nameOf(sql) : undefined;
    try {
      return await run<T>(pool, sql, params, name);
    } catch (err) {
      if (name === undefined || !isStalePlan(err)) throw err;
      namer.renew();
      return run<T>(pool, sql, params, namer.nameOf(sql));
    }
  };
  return {
    engine: 'postgres',
    query: (sql, params) => runPrepared(sql, params),
    exec: async (sql) => {
      await pool.query(sql);
    },
    copyFrom: (table, columns, text) => checkout((client) => copy(client, table, columns, text)),
    transaction: (fn) =>
      checkout(async (client) => {
        await client.query('BEGIN');
        try {
          const result = await fn({
            query: (sql, params) => run(client, sql, params),
            exec: async (sql) => {
              await client.query(sql);
            },
            copyFrom: (table, columns, text) => copy(client, table, columns, text),
          });
          await client.query('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        }
      }),
    interrupt: () => {
      // pg-pool keeps its clients in `_clients` (idle and checked out); a destroyed socket makes
      // the client's query in flight, or its connection attempt, fail ("Connection terminated").
      const clients = (pool as unknown as { _clients?: pg.Client[] })._clients ?? [];
      for (const client of clients) {
        (
          client as unknown as { connection?: { stream?: { destroy(): void } } }
        ).connection?.stream?.destroy();
      }
    },
    close: () => {
      untrackPool();
      return pool.end();
    },
  };
}

async function createPglite(dataDir?: string): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  // Before PGlite touches the files: a second owner would corrupt them.
  const unlock = dataDir ? lockDataDir(dataDir) : () => {};
  try {
    return await openPglite(dataDir, unlock);
  } catch (err) {
    unlock();
    throw err;
  }
}

async function openPglite(dataDir: string | undefined, unlock: () => void): Promise<Database> {
  const db = new PGlite({
    ...(dataDir ? { dataDir } : {}),
    // PostgreSQL's default 128 MB of shared buffers lives in the WASM heap, i.e. in this process's
    // RSS; the files are in the OS page cache anyway. Measured on bench:api: 250–280 MB RSS instead
    // of 385–425 MB, at the same throughput.
    // pys.notify_changes: the triggers of migration 0029 notify the process (see listen()).
    startParams: [
      ...PGlite.defaultStartParams,
      '-c',
      'shared_buffers=16MB',
      '-c',
      'pys.notify_changes=on',
    ],
    parsers: { [OID.INT8]: asText, [OID.NUMERIC]: asText, [OID.DATE]: asText },
  });
  await db.waitReady;
  const run = async <T>(
    q: Pick<PGlite, 'query'>,
    sql: string,
    params?: readonly unknown[],
  ): Promise<QueryResult<T>> => {
    const r = await q.query<T>(sql, params as unknown[] | undefined);
    // PGlite counts only written rows in affectedRows; a SELECT reports 0 there.
    return { rows: r.rows, rowCount: r.affectedRows || r.rows.length };
  };
  // PGlite has no client stream; COPY reads the data from its virtual /dev/blob device.
  const copy = async (
    q: Pick<PGlite, 'query'>,
    table: string,
    columns: readonly string[],
    text: string,
  ): Promise<number> => {
    const r = await q.query(copySql(table, columns, "'/dev/blob'"), [], {
      blob: new Blob([text]),
    });
    return r.affectedRows ?? 0;
  };
  return {
    engine: 'pglite',
    query: (sql, params) => run(db, sql, params),
    exec: async (sql) => {
      await db.exec(sql);
    },
    copyFrom: (table, columns, text) => copy(db, table, columns, text),
    // PGlite queues the listeners as microtasks while it reads the committing statement's answer.
    listen: async (channel, onNotify) => {
      const stop = await db.listen(channel, () => onNotify());
      return () => stop();
    },
    transaction: (fn) =>
      db.transaction((tx) =>
        fn({
          query: (sql, params) => run(tx, sql, params),
          exec: async (sql) => {
            await tx.exec(sql);
          },
          copyFrom: (table, columns, text) => copy(tx, table, columns, text),
        }),
      ),
    close: async () => {
      try {
        await db.close();
      } finally {
        unlock();
      }
    },
  };
}
