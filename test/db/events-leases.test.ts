/** Stored events (insert once by dedupe key, exact payload text) and leases, on every engine. */
import { afterEach, describe, expect, it } from 'vitest';
import { createEventsRepo, dedupeKey } from '../../src/db/events.ts';
import { createLeasesRepo } from '../../src/db/leases.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

describe.each(storageEngines())('events and leases on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const open = async () => {
    const t = await freshDatabase(engine);
    opened.push(t);
    return t.db;
  };

  it('stores an event once per dedupe key and keeps the payload text exactly', async () => {
    const db = await open();
    const partner = await createPartnersRepo(db).create('Acme');
    const events = createEventsRepo(db);
    const payload = {
      slug: 's',
      previous_apy: 0.0612,
      current_apy: 0.07,
      change_pct: 14.38,
      date: '2026-01-02',
    };
    const e = {
      partnerId: partner.id,
      environment: 'live' as const,
      productId: null,
      eventType: 'apy_change',
      dedupeKey: dedupeKey.daily('apy_change', 's', '2026-01-02'),
      payload,
      occurredAt: new Date('2026-01-02T23:59:58Z'),
    };
    const first = await events.insert(e);
    expect(first?.id).toMatch(/^evt_/);
    expect(first?.payload).toBe(JSON.stringify(payload)); // key order and number text unchanged
    expect(await events.insert({ ...e, payload: { other: true } })).toBeUndefined();
    const all = await events.list();
    expect(all).toHaveLength(1);
    expect(all[0]!.payload).toBe(JSON.stringify(payload));
  });

  it('orders events by a strictly increasing sequence', async () => {
    const db = await open();
    const partner = await createPartnersRepo(db).create('Acme');
    const events = createEventsRepo(db);
    for (const i of [1, 2, 3]) {
      await events.insert({
        partnerId: partner.id,
        environment: 'test',
        productId: null,
        eventType: 'deposit.confirmed',
        dedupeKey: dedupeKey.chainLog('deposit.confirmed', 31337, `0xAB${i}`, i),
        payload: { i },
        occurredAt: new Date(),
        chain: {
          chainId: 31337,
          blockNumber: BigInt(i),
          blockHash: '0x01',
          txHash: `0xab${i}`,
          logIndex: i,
        },
      });
    }
    const seqs = (await events.list({ eventType: 'deposit.confirmed' })).map((e) => e.seq);
    expect(seqs).toHaveLength(3);
    expect(seqs[0]! < seqs[1]! && seqs[1]! < seqs[2]!).toBe(true);
  });

  it('dedupe keys for chain logs ignore tx hash letter case', () => {
    expect(dedupeKey.chainLog('deposit.confirmed', 1, '0xABCDEF', 3)).toBe(
      dedupeKey.chainLog('deposit.confirmed', 1, '0xabcdef', 3),
    );
  });

  it('a lease has one holder until it expires; the holder renews it', async () => {
    const db = await open();
    const leases = createLeasesRepo(db);
    expect(await leases.acquire('indexer:1', 'a', 10_000)).toBe(true);
    expect(await leases.acquire('indexer:1', 'b', 10_000)).toBe(false);
    expect(await leases.acquire('indexer:1', 'a', 10_000)).toBe(true); // renewal
    expect(await leases.holderOf('indexer:1')).toBe('a');
    expect(await leases.acquire('indexer:2', 'b', 10_000)).toBe(true); // names are independent
  });

  it('an expired lease is taken over; a released one at once', async () => {
    const db = await open();
    const leases = createLeasesRepo(db);
    expect(await leases.acquire('job', 'a', 50)).toBe(true);
    await new Promise((r) => setTimeout(r, 120));
    expect(await leases.acquire('job', 'b', 10_000)).toBe(true);
    await leases.release('job', 'a'); // not the holder: no effect
    expect(await leases.holderOf('job')).toBe('b');
    await leases.release('job', 'b');
    expect(await leases.acquire('job', 'c', 10_000)).toBe(true);
  });

  it('concurrent acquisitions give the lease to exactly one holder', async () => {
    const db = await open();
    const leases = createLeasesRepo(db);
    const holders = Array.from({ length: 8 }, (_, i) => `h${i}`);
    const won = await Promise.all(holders.map((h) => leases.acquire('race', h, 10_000)));
    expect(won.filter(Boolean)).toHaveLength(1);
  });
});
