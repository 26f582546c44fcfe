/**
 * Forward-only migrations: numbered SQL files in ./migrations, applied in order, each recorded with a
 * checksum. All pending files run in one transaction behind a transaction-scoped advisory lock, so
 * two processes (or two calls) migrating at once serialise: the second waits, then finds nothing to
 * do. An applied file that was edited afterwards stops the run instead of drifting silently.
 */

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import type { Database } from './client.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Arbitrary constant shared by every process of this service: the migration lock's identity. */
const MIGRATION_LOCK_ID = 7_240_113;

export interface Migration {
  id: string;
  sql: string;
  checksum: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = readFileSync(path.join(dir, file), 'utf8');
      return {
        id: file.replace(/\.sql$/, ''),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

export class MigrationError extends BaseError<'migration_failed'> {
  override name = 'MigrationError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('migration_failed', message, options);
  }
}

/** Applies pending migrations; returns the ids applied by this call. */
export async function migrate(db: Database, migrations = listMigrations()): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      id text PRIMARY KEY,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await tx.query<{ id: string; checksum: string }>(
      'SELECT id, checksum FROM schema_migrations',
    );
    const applied = new Map(rows.map((r) => [r.id, r.checksum]));
    const known = new Set(migrations.map((m) => m.id));
    for (const id of applied.keys()) {
      if (!known.has(id)) {
        throw new MigrationError(
          `database has migration ${id}, which this build does not know: is it older than the database?`,
        );
      }
    }
    const done: string[] = [];
    for (const m of migrations) {
      const seen = applied.get(m.id);
      if (seen !== undefined) {
        if (seen !== m.checksum) {
          throw new MigrationError(`migration ${m.id} was changed after it was applied`);
        }
        continue;
      }
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (id, checksum) VALUES ($1, $2)', [
        m.id,
        m.checksum,
      ]);
      done.push(m.id);
    }
    return done;
  });
}
