/**
 * Test databases on both engines. `storageEngines()` lists PGlite always and PostgreSQL when
 * TEST_DATABASE_URL (or DATABASE_URL) is set, so one suite runs on each with `describe.each`.
 *
 * Every call of `freshDatabase` gives an isolated, migrated database: PostgreSQL gets a new database
 * copied from a migrated template database on the server; PGlite gets a copy of a migrated template
 * directory (initdb costs seconds, a copy a fraction of one). Call the returned `drop()` in
 * afterAll/afterEach.
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

/** The hash of every migration: a template is reused only for the exact same set. */
function migrationsKey(): string {
  return listMigrations()
    .reduce((h, m) => h.update(m.checksum), createHash('sha256'))
    .digest('hex')
    .slice(0, 32);
}

const databaseUrl = (admin: string, name: string) => {
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
};

let postgresTemplate: Promise<string> | undefined;

/**
 * A migrated database on the server, made once per migration set and copied by CREATE DATABASE …
 * TEMPLATE (~70 ms against ~160 ms for create and migrate, on this machine). Built under a
 * temporary name and renamed, under an advisory lock, so concurrent test processes neither build it
 * twice nor copy half of one; nothing stays connected to it once built.
 */
function pgTemplate(admin: string): Promise<string> {
  postgresTemplate ??= (async () => {
    const name = `pys_template_${migrationsKey()}`;
    await withAdmin(admin, async (c) => {
      await c.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
      try {
        const found = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        if (found.rowCount) return;
        const building = `${name}_${randomBytes(4).toString('hex')}`;
        await c.query(`CREATE DATABASE ${building}`);
        const db = await createDatabase({
          engine: 'postgres',
          url: databaseUrl(admin, building),
          poolMax: 1,
        });
        try {
          await migrate(db);
        } finally {
          await db.close();
        }
        await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      } finally {
        await c.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
      }
    });
    return name;
  })();
  postgresTemplate.catch(() => {
    postgresTemplate = undefined; // the next call tries again
  });
  return postgresTemplate;
}

async function freshPostgres(migrated: boolean): Promise<TestDatabase> {
  const admin = postgresAdminUrl();
  if (!admin) throw new Error('TEST_DATABASE_URL is not set');
  const name = `pys_test_${randomBytes(6).toString('hex')}`;
  const template = migrated ? ` TEMPLATE ${await pgTemplate(admin)}` : '';
  await withAdmin(admin, (c) => c.query(`CREATE DATABASE ${name}${template}`));
  const url = new URL(databaseUrl(admin, name));
  const db = await createDatabase({ engine: 'postgres', url: url.toString(), poolMax: 5 });
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
  // Every migration counts: a new file must never reuse a stale template.
  const key = migrated ? migrationsKey() : 'empty';
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
