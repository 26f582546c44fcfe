/** Opens the database the configuration names: PostgreSQL when DATABASE_URL is set, else PGlite. */
import path from 'node:path';
import type { Config } from '../config.ts';
import { BaseError } from '../errors.ts';
import { registerUrlPassword, scrubSecrets } from '../url-secrets.ts';
import { createDatabase, type Database } from './client.ts';

/** How long opening PostgreSQL waits for its first connection before giving up. */
export const DATABASE_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The database could not be reached or refused us: one line (the CLI prints a BaseError without a
 * stack) that names DATABASE_URL's host, port and database (never its password) and what to check.
 */
export class DatabaseConnectError extends BaseError<'database_unreachable'> {
  override name = 'DatabaseConnectError';
  constructor(message: string, cause: unknown) {
    super('database_unreachable', message, { cause, retryable: true });
  }
}

/**
 * Which database the configuration names, for people: `PostgreSQL at host:port/database
 * (DATABASE_URL)` (no user, no password) or `the embedded PGlite database in <dir>`.
 */
export function describeDatabase(config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR'>): string {
  if (!config.DATABASE_URL) {
    return `the embedded PGlite database in ${path.join(config.DATA_DIR, 'pglite')} (DATABASE_URL is not set)`;
  }
  return `PostgreSQL at ${postgresTarget(config.DATABASE_URL)} (DATABASE_URL)`;
}

/** host:port/database of a PostgreSQL URL; a socket directory (`?host=/run/postgresql`) as is. */
function postgresTarget(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(an unparsable URL)';
  }
  const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
  const port = parsed.port || parsed.searchParams.get('port') || '5432';
  let database = '';
  try {
    database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  } catch {
    database = parsed.pathname.replace(/^\//, '');
  }
  // No host part at all (`postgresql:/user:…@host/db`, a slash missing): the path then holds the
  // user and password, which must not be shown.
  if (!parsed.host && !url.includes('//')) return '(a URL without a host: expected postgres://…)';
  return `${host.startsWith('/') ? host : `${host}:${port}`}/${database || '(no database)'}`;
}

/** What went wrong and what to do next, from a connection's or the first query's failure. */
function explain(err: unknown, timeoutMs: number): string {
  const e = err as { code?: unknown; message?: unknown; hostname?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused: check that PostgreSQL runs and listens on that host and port';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host ${typeof e?.hostname === 'string' ? `"${e.hostname}" ` : ''}not found (${code}): check the host name in DATABASE_URL`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `host unreachable (${code}): check the host and port in DATABASE_URL and the network or firewall between here and PostgreSQL`;
    case 'ECONNRESET':
      return 'the connection was reset: check that the port in DATABASE_URL is PostgreSQL’s (not another service’s) and its TLS settings (sslmode)';
    case '3D000': // invalid_catalog_name
      return `${message}: create it (createdb) or correct the database name in DATABASE_URL`;
    case '28P01': // invalid_password
      return `${message}: check the user name and password in DATABASE_URL`;
    case '28000': // invalid_authorization_specification (no user, pg_hba.conf refusal)
      return `${message}: check the user name and DATABASE_URL's form (postgres://user:password@host:port/database), and that pg_hba.conf lets this user in from here`;
    case '57P03': // cannot_connect_now
      return `${message}: PostgreSQL is starting up or shutting down; try again in a moment`;
    case '53300': // too_many_connections
      return `${message}: lower DATABASE_POOL_MAX or raise PostgreSQL's max_connections`;
  }
  if (/timeout expired|connection timeout/i.test(message)) {
    return `no answer within ${timeoutMs / 1000} s: check that the host and port in DATABASE_URL are PostgreSQL's (not another service that accepts and stays silent) and that it is not overloaded`;
  }
  return `${message}: check DATABASE_URL`;
}

export interface OpenOptions {
  /**
   * Aborting it gives up a PostgreSQL connection still being made (a SIGTERM during start-up):
   * the open then rejects at once instead of waiting for the connect deadline.
   */
  signal?: AbortSignal;
  /** The connect deadline; DATABASE_CONNECT_TIMEOUT_MS unless given. */
  connectTimeoutMs?: number;
}

/**
 * Opens the configured database. PostgreSQL is connected to at once (one `SELECT 1`), within the
 * connect deadline, so that a wrong or silent DATABASE_URL fails here with one clear line rather
 * than at the first query, or never.
 */
export async function openDatabase(config: Config, options: OpenOptions = {}): Promise<Database> {
  if (!config.DATABASE_URL) {
    return createDatabase({ engine: 'pglite', dataDir: path.join(config.DATA_DIR, 'pglite') });
  }
  const timeoutMs = options.connectTimeoutMs ?? DATABASE_CONNECT_TIMEOUT_MS;
  const db = await createDatabase({
    engine: 'postgres',
    url: config.DATABASE_URL,
    poolMax: config.DATABASE_POOL_MAX,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
    connectTimeoutMs: timeoutMs,
  });
  const { signal } = options;
  const onAbort = () => db.interrupt?.();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (signal?.aborted) throw new Error('stopped');
    await db.query('SELECT 1');
    return db;
  } catch (err) {
    await db.close().catch(() => {});
    const reason = signal?.aborted
      ? 'stopped while connecting (a shutdown was requested)'
      : explain(err, timeoutMs);
    // The server's own words are quoted; the password never is, should any text carry it.
    registerUrlPassword(config.DATABASE_URL);
    throw new DatabaseConnectError(
      scrubSecrets(`cannot connect to ${describeDatabase(config)}: ${reason}`),
      err,
    );
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
