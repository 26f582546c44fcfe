/** The storage layer on every engine: migrations, transactions, type mapping, a repository. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDatabase } from '../../src/db/client.ts';
import { listMigrations, MigrationError, migrate } from '../../src/db/migrate.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

describe.each(storageEngines())('storage on %s', (engine) => {
  const opened: TestDatabase[] = [];
  const open = async (migrated = true) => {
    const t = await freshDatabase(engine, { migrated });
    opened.push(t);
    return t;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });

  it('applies every migration once; a second run applies nothing', async () => {
    const { db } = await open(false);
    const first = await migrate(db);
    expect(first).toEqual(listMigrations().map((m) => m.id));
    expect(await migrate(db)).toEqual([]);
    const { rows } = await db.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual(first);
  });

  it('serialises concurrent migrations: each file is applied exactly once', async () => {
    const { db, location } = await open(false);
    // PostgreSQL: a second pool stands for a second process. PGlite is single-process by design,
    // so two concurrent calls on one instance are the concurrency it can see.
    const other =
      engine === 'postgres' ? await createDatabase({ engine: 'postgres', url: location }) : db;
    try {
      const results = await Promise.all([migrate(db), migrate(other), migrate(db)]);
      expect(results.flat().sort()).toEqual(listMigrations().map((m) => m.id));
    } finally {
      if (other !== db) await other.close();
    }
  });

  it('refuses to run when an applied migration was edited', async () => {
    const { db } = await open(false);
    const dir = mkdtempSync(path.join(tmpdir(), 'pys-migrations-'));
    writeFileSync(path.join(dir, '0001_a.sql'), 'CREATE TABLE a (x int);');
    await migrate(db, listMigrations(dir));
    writeFileSync(path.join(dir, '0001_a.sql'), 'CREATE TABLE a (x bigint);');
    await expect(migrate(db, listMigrations(dir))).rejects.toThrow(MigrationError);
  });

  it('rolls a failing migration back whole', async () => {
    const { db } = await open(false);
    const dir = mkdtempSync(path.join(tmpdir(), 'pys-migrations-'));
    writeFileSync(path.join(dir, '0001_ok.sql'), 'CREATE TABLE ok_table (x int);');
    writeFileSync(path.join(dir, '0002_bad.sql'), 'CREATE TABLE bad_table (x int); SELECT nope;');
    await expect(migrate(db, listMigrations(dir))).rejects.toThrow();
    const { rows } = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM information_schema.tables WHERE table_name IN ('ok_table', 'bad_table')",
    );
    expect(rows[0]!.n).toBe('0');
  });

  it('maps SQL types to the same JavaScript types on every engine', async () => {
    const { db } = await open();
    const big = (2n ** 256n).toString();
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT 9007199254740993::int8 AS i8, $1::numeric(80,0) AS num, '2026-03-01'::date AS d,
              '2026-03-01T12:00:00Z'::timestamptz AS ts, '{"a":[1,"2"]}'::jsonb AS j, 7::int4 AS i4`,
      [big],
    );
    expect(rows[0]).toEqual({
      i8: '9007199254740993',
      num: big,
      d: '2026-03-01',
      ts: new Date('2026-03-01T12:00:00Z'),
      j: { a: [1, '2'] },
      i4: 7,
    });
  });

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    const { db } = await open();
    const partners = createPartnersRepo(db);
    await db.transaction(async (tx) => {
      await createPartnersRepo(tx).create('Committed');
    });
    await expect(
      db.transaction(async (tx) => {
        await createPartnersRepo(tx).create('Rolled back');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await partners.list()).map((p) => p.name)).toEqual(['Committed']);
  });

  it('reports written rows in rowCount', async () => {
    const { db } = await open();
    await createPartnersRepo(db).create('A');
    await createPartnersRepo(db).create('B');
    const r = await db.query("UPDATE partners SET name = name || '!' WHERE name IN ('A', 'B')");
    expect(r.rowCount).toBe(2);
  });

  it('stores and finds partners; names are unique', async () => {
    const { db } = await open();
    const partners = createPartnersRepo(db);
    const p = await partners.create('Acme Wallet');
    expect(p.id).toMatch(/^ptn_[1-9A-HJ-NP-Za-km-z]{22}$/);
    expect(await partners.findByName('Acme Wallet')).toEqual(p);
    expect(await partners.findByName('Nobody')).toBeUndefined();
    await expect(partners.create('Acme Wallet')).rejects.toThrow();
  });
});
