import { describe, expect, it } from 'vitest';
import { deferredDatabase } from '../../src/db/deferred.ts';
import { freshDatabase } from '../helpers/db.ts';

describe('deferred database', () => {
  it('holds queries until the real database is ready, then runs them on it', async () => {
    const t = await freshDatabase('pglite');
    let open: (db: typeof t.db) => void = () => {};
    const db = deferredDatabase('pglite', new Promise((r) => (open = r)));
    let answered = false;
    const pending = db.query<{ x: number }>('SELECT 1 AS x').then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(answered).toBe(false);
    open(t.db);
    expect((await pending).rows).toEqual([{ x: 1 }]);
    await t.drop();
  });

  it('passes an opening failure to every caller', async () => {
    const db = deferredDatabase('postgres', Promise.reject(new Error('cannot connect')));
    await expect(db.query('SELECT 1')).rejects.toThrow('cannot connect');
    await expect(db.transaction(async () => 1)).rejects.toThrow('cannot connect');
    await expect(db.close()).resolves.toBeUndefined();
  });
});
