/**
 * Test databases on both engines. `storageEngines()` lists PGlite always and PostgreSQL when
 * TEST_DATABASE_URL (or DATABASE_URL) is set, so one suite runs on each with `describe.each`.
 *
 * Every call of `freshDatabase` gives an isolated, migrated database: PostgreSQL gets a new database
 * created on the server; PGlite gets a copy of a migrated template directory (initdb costs seconds,
 * a copy a fraction of one). Call the returned `drop()` in afterAll/afterEach.
 *
 * PGlite directories live under `scratchRoot()` (tmpfs where there is one: see scratch.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createDatabase, type Database } from '../../src/db/client.ts';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import { scratchRoot } from './scratch.ts';

export type EngineName = 'pglite' | 'postgres';

/** A new empty directory under `scratchRoot()` (remove it when done). */
export function scratchDir(prefix: string): string {
  return mkdtempSync(path.join(scratchRoot(), prefix));
}

export function postgresAdminUrl(): string | undefined {
  return process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || undefined;
}

export function storageEngines(): EngineName[] {
  return postgresAdminUrl() ? ['pglite', 'postgres'] : ['pglite'];
}

export interface TestDatabase {
  db: Database;
  /** Connection URL (postgres) or data directory (pglite) of this database. */
  location: string;
  drop(): Promise<void>;
}

export interface FreshOptions {
  /** Leave the schema empty (for migration tests). */
  migrated?: boolean;
}

export async function freshDatabase(
  engine: EngineName,
  options: FreshOptions = {},
): Promise<TestDatabase> {
  const migrated = options.migrated ?? true;
  return engine === 'postgres' ? freshPostgres(migrated) : freshPglite(migrated);
}

async function freshPostgres(migrated: boolean): Promise<TestDatabase> {
  const admin = postgresAdminUrl();
  if (!admin) throw new Error('TEST_DATABASE_URL is not set');
  const name = `pys_test_${randomBytes(6).toString('hex')}`;
  await withAdmin(admin, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const db = await createDatabase({ engine: 'postgres', url: url.toString(), poolMax: 5 });
  if (migrated) await migrate(db);
  return {
    db,
    location: url.toString(),
    async drop() {
      await db.close().catch(() => {});
      await withAdmin(admin, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

async function withAdmin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A migrated PGlite directory, made once per migration set and reused by every test process. */
async function pgliteTemplate(migrated: boolean): Promise<string> {
  const key = migrated
    ? listMigrations()
        // Every migration counts: a new file must never reuse a stale template.
        .reduce((h, m) => h.update(m.checksum), createHash('sha256'))
        .digest('hex')
        .slice(0, 32)
    : 'empty';
  const dir = path.join(scratchRoot(), `pys-pglite-template-${key}`);
  if (existsSync(dir)) return dir;
  // Build beside the final path and rename, so a concurrent test process never sees half a template.
  const building = `${dir}.${process.pid}.${randomBytes(4).toString('hex')}`;
  const db = await createDatabase({ engine: 'pglite', dataDir: building });
  if (migrated) await migrate(db);
  await db.close();
  try {
    renameSync(building, dir);
  } catch {
    rmSync(building, { recursive: true, force: true }); // another process won the race
  }
  return dir;
}

async function freshPglite(migrated: boolean): Promise<TestDatabase> {
  const template = await pgliteTemplate(migrated);
  const dir = scratchDir('pys-pglite-');
  cpSync(template, dir, { recursive: true });
  const db = await createDatabase({ engine: 'pglite', dataDir: dir });
  return {
    db,
    location: dir,
    async drop() {
      await db.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
