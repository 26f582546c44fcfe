/**
 * One id format (src/ids.ts): ids made by newId() and ids the database makes itself (new_id(),
 * migration 0041: webhook deliveries and embed ids) have the same shape, and both draw every
 * character uniformly from the base58 alphabet (a chi-square test over 2,000 ids of each).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ID_PREFIXES, isId, newId } from '../../src/ids.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Chi-square statistic of the characters after the prefix, against a uniform draw. */
function chiSquare(ids: readonly string[]): number {
  const counts = new Map<string, number>();
  let total = 0;
  for (const id of ids) {
    for (const c of id.slice(id.indexOf('_') + 1)) {
      counts.set(c, (counts.get(c) ?? 0) + 1);
      total++;
    }
  }
  const expected = total / ALPHABET.length;
  let chi = 0;
  for (const c of ALPHABET) chi += ((counts.get(c) ?? 0) - expected) ** 2 / expected;
  return chi;
}
// 57 degrees of freedom: P(χ² > 120) ≈ 2·10⁻⁶, so a uniform draw fails this about never, while
// a biased one (b % 58 over all 256 byte values over-weights 24 characters by ~1/4) gives ~470.
const CHI_LIMIT = 120;

describe('ids', () => {
  it('newId makes every prefix in the one shape, uniformly', () => {
    for (const prefix of Object.keys(ID_PREFIXES) as Array<keyof typeof ID_PREFIXES>) {
      const id = newId(prefix);
      expect(isId(prefix, id), id).toBe(true);
      expect(isId(prefix === 'ptn' ? 'prd' : 'ptn', id)).toBe(false);
    }
    const ids = Array.from({ length: 2000 }, () => newId('evt'));
    expect(new Set(ids).size).toBe(2000);
    expect(chiSquare(ids)).toBeLessThan(CHI_LIMIT);
  });

  it('rejects what is not an id of the kind, and accepts the database ids made before 0041', () => {
    for (const bad of ['', 'dlv_', 'dlv_0OIl1111111111111111111', `evt_${'1'.repeat(21)}`, 'x']) {
      expect(isId('dlv', bad) || isId('evt', bad), bad).toBe(false);
    }
    expect(isId('dlv', `dlv_${'0a'.repeat(16)}`)).toBe(true);
    expect(isId('emb', `emb_${'f3'.repeat(16)}`)).toBe(true);
    expect(isId('evt', `evt_${'0a'.repeat(16)}`)).toBe(false);
  });

  describe.each(storageEngines())('%s: new_id() in the database', (engine) => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await freshDatabase(engine);
    });
    afterAll(async () => {
      await t.drop();
    });

    it('makes delivery and embed ids in the same shape as newId, uniformly', async () => {
      const { rows } = await t.db.query<{ id: string }>(
        "SELECT new_id('dlv') AS id FROM generate_series(1, 2000)",
      );
      const ids = rows.map((r) => r.id);
      for (const id of ids) expect(isId('dlv', id), id).toBe(true);
      expect(ids.every((id) => id.length === 'dlv_'.length + 22)).toBe(true);
      expect(new Set(ids).size).toBe(2000);
      expect(chiSquare(ids)).toBeLessThan(CHI_LIMIT);

      const embed = await t.db.query<{ id: string }>('SELECT new_embed_id() AS id');
      expect(isId('emb', embed.rows[0]!.id)).toBe(true);
      const column = await t.db.query<{ d: string }>(
        `SELECT column_default AS d FROM information_schema.columns
         WHERE table_name = 'webhook_deliveries' AND column_name = 'id'`,
      );
      expect(column.rows[0]!.d).toContain("new_id('dlv'");
    });
  });
});
