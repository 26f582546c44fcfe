/**
 * The indexer's write path on every engine: COPY text (escaping), the COPY fast path and its
 * conflict fallback, chain-log dedupe by columns, and the set-based reference checks that replaced
 * the events table's foreign keys (migration 0012).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { IndexedEvent } from '../../src/db/chain-events-copy.ts';
import { insertEvents } from '../../src/db/chain-events-copy.ts';
import { copyField, copyText, unescapeCopyField } from '../../src/db/copy-text.ts';
import { createEventsRepo, dedupeKey } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Environment } from '../../src/db/products.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

describe('COPY text format', () => {
  it('escapes exactly backslash, tab, newline and carriage return; NULL is \\N', () => {
    expect(copyField('a\\b\tc\nd\re')).toBe('a\\\\b\\tc\\nd\\re');
    expect(copyField('{"k":"\\"q\\" é ✓"}')).toBe('{"k":"\\\\"q\\\\" é ✓"}');
    expect(copyField(null)).toBe('\\N');
    expect(copyField(2n ** 200n)).toBe((2n ** 200n).toString());
    expect(copyField(-7)).toBe('-7');
    expect(
      copyText([
        ['a', null, 1],
        ['b\tc', 'd', 2n],
      ]),
    ).toBe('a\t\\N\t1\nb\\tc\td\t2\n');
    for (const v of ['a\\b\tc\nd\re', '\\N', '\\\\t', 'plain ✓', '']) {
      expect(unescapeCopyField(copyField(v))).toBe(v);
    }
    expect(unescapeCopyField(copyField(null))).toBeNull();
  });
});

describe.each(storageEngines())('event bulk writes on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const setup = async () => {
    const t = await freshDatabase(engine);
    opened.push(t);
    const partners = createPartnersRepo(t.db);
    const acme = await partners.create('Acme');
    const other = await partners.create('Other');
    const product = async (partnerId: string, environment: Environment, slug: string) =>
      createProductsRepo(t.db).create({
        partnerId,
        environment,
        slug,
        displayName: slug,
        riskLabel: 'low',
        chainId: 31337,
        vaultKind: 'sync',
        engineName: 'E',
        engineSymbol: 'yE',
        underlyingVaultAddress: `0x${'1'.repeat(40)}`,
        assetAddress: `0x${'2'.repeat(40)}`,
        assetSymbol: 'TUSD',
        assetDecimals: 6,
        serviceFeeBps: 500,
        partnerFeeBps: 1000,
        serviceFeeRecipient: `0x${'3'.repeat(40)}`,
        partnerFeeRecipient: `0x${'4'.repeat(40)}`,
      });
    return {
      db: t.db,
      acme,
      other,
      acmeLive: await product(acme.id, 'live', 'acme-live'),
      otherLive: await product(other.id, 'live', 'other-live'),
    };
  };

  const event = (
    partnerId: string,
    productId: string,
    i: number,
    payload = `{"i":${i}}`,
  ): IndexedEvent => ({
    partnerId,
    environment: 'live',
    productId,
    eventType: 'deposit.confirmed',
    payload,
    occurredAt: '2026-01-02T03:04:05Z',
    chainId: 31337,
    blockNumber: BigInt(100 + i),
    blockHash: `0x${'b'.repeat(64)}`,
    txHash: `0x${i.toString(16).padStart(64, '0')}`,
    logIndex: i % 3,
  });

  it('COPY keeps payload text byte for byte, tabs, newlines and backslashes included', async () => {
    const { db, acme, acmeLive } = await setup();
    const tricky = JSON.stringify({ memo: 'tab\there\nnew "quoted" \\ back ✓ é', n: '1.000001' });
    const raw = '{"raw":"a\tb\nc\\\\d\r"}'; // not valid JSON: the column is text, kept as is
    const n = await db.transaction((tx) =>
      insertEvents(tx, [
        event(acme.id, acmeLive.id, 1, tricky),
        event(acme.id, acmeLive.id, 2, raw),
      ]),
    );
    expect(n).toBe(2);
    const stored = await createEventsRepo(db).list();
    expect(stored.map((e) => e.payload)).toEqual([tricky, raw]);
    expect(stored[0]?.dedupeKey).toBe(
      dedupeKey.chainLog('deposit.confirmed', 31337, stored[0]?.txHash ?? '', 1),
    );
    expect(stored[0]?.occurredAt.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(stored[0]?.blockNumber).toBe(101n);
  });

  it('a chunk that meets stored events inserts only the new ones, in chain order', async () => {
    const { db, acme, acmeLive } = await setup();
    const all = Array.from({ length: 12 }, (_, i) =>
      event(acme.id, acmeLive.id, i, `{"i":"${i}\\\\"}`),
    );
    // Events 3..5 already stored (a range indexed before a rewind).
    await db.transaction((tx) => insertEvents(tx, all.slice(3, 6)));
    const n = await db.transaction((tx) => insertEvents(tx, all, { chunk: 5 }));
    expect(n).toBe(9);
    const stored = await createEventsRepo(db).list();
    expect(stored).toHaveLength(12);
    // Seq order: the three first stored, then the rest in the order given.
    expect(stored.map((e) => e.blockNumber)).toEqual(
      [3, 4, 5, 0, 1, 2, 6, 7, 8, 9, 10, 11].map((i) => BigInt(100 + i)),
    );
    expect(stored.map((e) => e.payload)).toEqual(
      [3, 4, 5, 0, 1, 2, 6, 7, 8, 9, 10, 11].map((i) => `{"i":"${i}\\\\"}`),
    );
    // Indexing everything again stores nothing.
    expect(await db.transaction((tx) => insertEvents(tx, all, { chunk: 4 }))).toBe(0);
  });

  it('a chain log is one event per (event_type, chain_id, tx_hash, log_index)', async () => {
    const { db, acme, acmeLive } = await setup();
    const e = event(acme.id, acmeLive.id, 1);
    await db.transaction((tx) => insertEvents(tx, [e]));
    // The same log through the generic repository (upper-case hash): still one event.
    const again = await createEventsRepo(db).insert({
      partnerId: acme.id,
      environment: 'live',
      productId: acmeLive.id,
      eventType: e.eventType,
      dedupeKey: dedupeKey.chainLog(e.eventType, e.chainId, e.txHash, e.logIndex),
      payload: {},
      occurredAt: new Date(),
      chain: {
        chainId: e.chainId,
        blockNumber: e.blockNumber,
        blockHash: e.blockHash,
        txHash: e.txHash.toUpperCase().replace('0X', '0x') as `0x${string}`,
        logIndex: e.logIndex,
      },
    });
    expect(again).toBeUndefined();
    // Another type on the same log is another event.
    expect(
      await db.transaction((tx) => insertEvents(tx, [{ ...e, eventType: 'redeem.confirmed' }])),
    ).toBe(1);
  });

  it('rejects an event naming a missing partner or product, or a product of another partner', async () => {
    const { db, acme, acmeLive, otherLive } = await setup();
    const write = (e: IndexedEvent) => db.transaction((tx) => insertEvents(tx, [e]));
    const fk = { code: '23503' };
    await expect(write(event('ptn_missing', acmeLive.id, 1))).rejects.toMatchObject(fk);
    await expect(write(event(acme.id, 'prd_missing', 1))).rejects.toMatchObject(fk);
    await expect(write(event(acme.id, otherLive.id, 1))).rejects.toMatchObject(fk);
    await expect(
      write({ ...event(acme.id, acmeLive.id, 1), environment: 'test' }),
    ).rejects.toMatchObject(fk);
    // The whole statement is refused, valid rows with it.
    await expect(
      db.transaction((tx) =>
        insertEvents(tx, [event(acme.id, acmeLive.id, 2), event(acme.id, otherLive.id, 3)]),
      ),
    ).rejects.toMatchObject(fk);
    expect(await createEventsRepo(db).list()).toHaveLength(0);
    expect(await write(event(acme.id, acmeLive.id, 4))).toBe(1);
  });

  it('partners and products are never deleted, so references stay valid', async () => {
    const { db, acme, acmeLive } = await setup();
    await expect(
      db.query('DELETE FROM products WHERE id = $1', [acmeLive.id]),
    ).rejects.toMatchObject({ code: '23001' });
    await expect(db.query('DELETE FROM partners WHERE id = $1', [acme.id])).rejects.toMatchObject({
      code: '23001',
    });
    await expect(db.query('TRUNCATE products CASCADE')).rejects.toMatchObject({ code: '23001' });
    const { rows } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM products');
    expect(rows[0]?.n).toBe('2');
  });

  it('an event without a dedupe key must carry its chain log identity', async () => {
    const { db, acme } = await setup();
    await expect(
      db.query(
        `INSERT INTO events (id, partner_id, environment, event_type, payload, occurred_at)
         VALUES ('evt_x', $1, 'live', 'apy_change', '{}', now())`,
        [acme.id],
      ),
    ).rejects.toMatchObject({ code: '23514' });
  });
});
