/**
 * The delivery queue's attempt protocol on every engine: an attempt is counted when claimed, a
 * claimed row is not claimed again while leased, a stale worker cannot overwrite a newer attempt,
 * the third failure fails the delivery, and an abandoned third attempt is failed once its lease ends.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/client.ts';
import { createDatabase } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { type AttemptOutcome, createDeliveryQueue } from '../../src/db/webhook-delivery-queue.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const box = createSecretBox(randomBytes(32));

async function seed(db: Database, events: number) {
  const partner = await createPartnersRepo(db).create(`P-${randomBytes(3).toString('hex')}`);
  const { destination } = await createWebhookDestinationsRepo(db, box).add({
    partnerId: partner.id,
    environment: 'live',
    url: 'https://receiver.example/hook',
  });
  const repo = createEventsRepo(db);
  for (let i = 0; i < events; i++) {
    await repo.insert({
      partnerId: partner.id,
      environment: 'live',
      productId: null,
      eventType: 'vault_pause',
      dedupeKey: `ping:${destination.id}:${i}`,
      payload: { n: i },
      occurredAt: new Date(),
    });
  }
  return { partner, destination };
}

const failure = (id: string, attempt: number, retryInMs = 0): AttemptOutcome => ({
  id,
  attempt,
  ok: false,
  statusCode: 500,
  bodyExcerpt: 'boom',
  error: null,
  retryInMs,
});

const row = async (db: Database, id: string) =>
  (
    await db.query<{
      status: string;
      attempts: number;
      last_response_code: number | null;
      last_response_body: string | null;
      last_error: string | null;
    }>('SELECT * FROM webhook_deliveries WHERE id = $1', [id])
  ).rows[0];

describe.each(storageEngines())('delivery queue on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const open = async () => {
    const t = await freshDatabase(engine);
    opened.push(t);
    return t;
  };

  it('claims each due delivery once, counts the attempt and carries the exact payload', async () => {
    const { db } = await open();
    await seed(db, 3);
    const queue = createDeliveryQueue(db);
    const first = await queue.claim(10, 60_000);
    expect(first).toHaveLength(3);
    expect(first.map((d) => d.attempt)).toEqual([1, 1, 1]);
    expect(first.map((d) => d.payload).sort()).toEqual(['{"n":0}', '{"n":1}', '{"n":2}']);
    expect(first[0]?.url).toBe('https://receiver.example/hook');
    // Leased: not claimable again until the lease ends.
    expect(await queue.claim(10, 60_000)).toEqual([]);
  });

  it('records delivered, schedules the retry, fails after the third attempt', async () => {
    const { db } = await open();
    await seed(db, 2);
    const queue = createDeliveryQueue(db);
    const [a, b] = await queue.claim(10, 60_000);
    if (!a || !b) throw new Error('expected two deliveries');
    expect(
      await queue.record([
        {
          id: a.id,
          attempt: 1,
          ok: true,
          statusCode: 204,
          bodyExcerpt: '',
          error: null,
          retryInMs: 0,
        },
        failure(b.id, 1, 0),
      ]),
    ).toBe(2);
    expect(await row(db, a.id)).toMatchObject({
      status: 'delivered',
      attempts: 1,
      last_response_code: 204,
    });
    expect(await row(db, b.id)).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_response_code: 500,
      last_response_body: 'boom',
    });
    // Retry due at once (retryInMs 0): attempt 2, then 3, then failed.
    const [b2] = await queue.claim(10, 60_000);
    expect(b2).toMatchObject({ id: b.id, attempt: 2 });
    await queue.record([
      { ...failure(b.id, 2), statusCode: null, bodyExcerpt: null, error: 'ECONNREFUSED' },
    ]);
    expect(await row(db, b.id)).toMatchObject({
      status: 'pending',
      attempts: 2,
      last_error: 'ECONNREFUSED',
      last_response_code: null,
    });
    const [b3] = await queue.claim(10, 60_000);
    expect(b3).toMatchObject({ id: b.id, attempt: 3 });
    await queue.record([failure(b.id, 3)]);
    expect(await row(db, b.id)).toMatchObject({ status: 'failed', attempts: 3 });
    expect(await queue.claim(10, 0)).toEqual([]);
  });

  it('a retry is not due before its delay', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    const [a] = await queue.claim(10, 60_000);
    await queue.record([failure(a!.id, 1, 60_000)]);
    expect(await queue.claim(10, 60_000)).toEqual([]);
  });

  it('an expired lease is taken over as the next attempt; the stale outcome is ignored', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    const [a] = await queue.claim(10, 0); // lease ends at once: as if the worker died
    const [taken] = await queue.claim(10, 60_000);
    expect(taken).toMatchObject({ id: a!.id, attempt: 2 });
    // The first worker comes back late: its outcome no longer applies.
    expect(
      await queue.record([
        {
          id: a!.id,
          attempt: 1,
          ok: true,
          statusCode: 200,
          bodyExcerpt: '',
          error: null,
          retryInMs: 0,
        },
      ]),
    ).toBe(0);
    expect(await row(db, a!.id)).toMatchObject({ status: 'pending', attempts: 2 });
  });

  it('fails an abandoned third attempt once its lease ends, never trying a fourth', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    const [a] = await queue.claim(10, 0);
    await queue.claim(10, 0);
    await queue.claim(10, 0);
    expect(await queue.claim(10, 0)).toEqual([]);
    expect(await queue.failAbandoned()).toBe(1);
    expect(await row(db, a!.id)).toMatchObject({ status: 'failed', attempts: 3 });
    expect((await row(db, a!.id))?.last_error).toMatch(/stopped before recording/);
  });

  if (engine === 'postgres')
    it('concurrent claimers on separate connections never share a delivery', async () => {
      const t = await open();
      await seed(t.db, 300);
      const pools = await Promise.all(
        [0, 1, 2].map(() => createDatabase({ engine: 'postgres', url: t.location, poolMax: 4 })),
      );
      try {
        const seen: string[] = [];
        await Promise.all(
          pools.map(async (pool) => {
            const queue = createDeliveryQueue(pool);
            for (;;) {
              const got = await queue.claim(7, 60_000);
              if (got.length === 0) break;
              seen.push(...got.map((d) => d.id));
            }
          }),
        );
        expect(seen).toHaveLength(300);
        expect(new Set(seen).size).toBe(300);
      } finally {
        await Promise.all(pools.map((p) => p.close()));
      }
    });
});
