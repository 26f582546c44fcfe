/**
 * Server-side prepared statements on PostgreSQL (src/db/client.ts): a statement with parameters is
 * parsed once per connection and reused, up to a bound on distinct texts; without parameters, inside
 * a transaction, or with DATABASE_PREPARED_STATEMENTS=false, nothing is prepared. A column added by
 * another process (a migration in a rolling deploy) never fails a prepared `SELECT *`. Read from PostgreSQL's own
 * `pg_prepared_statements` view, on the one connection of a pool of one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '../../src/db/client.ts';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';

describe.skipIf(!postgresAdminUrl())('prepared statements on PostgreSQL', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase('postgres');
  });
  afterAll(async () => {
    await t?.drop();
  });

  const open = (preparedStatements?: boolean) =>
    createDatabase({
      engine: 'postgres',
      url: t.location,
      poolMax: 1,
      ...(preparedStatements === undefined ? {} : { preparedStatements }),
    });
  /** The statements prepared on the pool's only connection, with how often each was run. */
  const prepared = async (db: Database) =>
    (
      await db.query<{ statement: string; calls: string }>(
        `SELECT statement, generic_plans + custom_plans AS calls FROM pg_prepared_statements`,
      )
    ).rows;

  it('prepares a statement with parameters once and reuses it, with the same answers', async () => {
    const db = await open();
    try {
      const sql = 'SELECT $1::int + 1 AS n';
      for (let i = 0; i < 7; i++) {
        expect((await db.query<{ n: number }>(sql, [i])).rows[0]!.n).toBe(i + 1);
      }
      // A statement without parameters goes by the simple protocol, unprepared.
      await db.query('SELECT 1');
      const rows = await prepared(db);
      expect(rows.map((r) => r.statement)).toEqual([sql]);
      expect(Number(rows[0]!.calls)).toBe(7);
    } finally {
      await db.close();
    }
  });

  it('prepares at most 500 distinct texts per pool; the rest run unprepared, and still answer', async () => {
    const db = await open();
    try {
      for (let i = 0; i < 510; i++) {
        const { rows } = await db.query<{ n: number }>(`SELECT $1::int + ${i} AS n`, [1]);
        expect(rows[0]!.n).toBe(1 + i);
      }
      expect(await prepared(db)).toHaveLength(500);
    } finally {
      await db.close();
    }
  });

  it('prepares nothing inside a transaction', async () => {
    const db = await open();
    try {
      await db.transaction((tx) => tx.query('SELECT $1::int AS n', [1]));
      expect(await prepared(db)).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('answers a prepared SELECT * on every connection after other processes change its columns', async () => {
    const db = await createDatabase({ engine: 'postgres', url: t.location, poolMax: 3 });
    const table = `prep_${Date.now()}`;
    /** A migration on a connection of its own, as another process's would run. */
    const migrate = async (sql: string) => {
      const other = await createDatabase({ engine: 'postgres', url: t.location, poolMax: 1 });
      try {
        await other.exec(sql);
      } finally {
        await other.close();
      }
    };
    // Three at once: each of the pool's connections prepares the statement.
    const readAll = () =>
      Promise.all(
        [1, 2, 3].map(
          async () => (await db.query(`SELECT * FROM ${table} WHERE id = $1`, [1])).rows,
        ),
      );
    try {
      await db.exec(`CREATE TABLE ${table} (id int PRIMARY KEY, a text)`);
      await db.query(`INSERT INTO ${table} VALUES ($1, $2)`, [1, 'x']);
      for (let i = 0; i < 3; i++) {
        expect(await readAll()).toEqual([
          [{ id: 1, a: 'x' }],
          [{ id: 1, a: 'x' }],
          [{ id: 1, a: 'x' }],
        ]);
      }
      // PostgreSQL now refuses the statement prepared on every connection, on every run ("cached
      // plan must not change result type"); callers see only the new shape, each time.
      await migrate(`ALTER TABLE ${table} ADD COLUMN b text`);
      for (let i = 0; i < 3; i++) {
        expect(await readAll()).toEqual(Array(3).fill([{ id: 1, a: 'x', b: null }]));
      }
      await migrate(`ALTER TABLE ${table} DROP COLUMN a`);
      for (let i = 0; i < 3; i++) {
        expect(await readAll()).toEqual(Array(3).fill([{ id: 1, b: null }]));
      }
    } finally {
      await db.close();
    }
  });

  it('prepares nothing when turned off', async () => {
    const db = await open(false);
    try {
      await db.query('SELECT $1::int AS n', [1]);
      expect(await prepared(db)).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
