/**
 * The delivery queue's attempt protocol on every engine: a claim leases a row without counting an
 * attempt; the attempt counts when it is sent (markSent) or recorded; a claimed row is not claimed
 * again while leased; a stale worker can neither count nor overwrite a newer claim; the third
 * failure fails the delivery; a claim that never sent leaves the same attempt to claim again; an
 * abandoned third attempt that was sent is failed once its lease ends.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/client.ts';
import { createDatabase } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  createDeliveryQueue,
  type DeliveryQueue,
} from '../../src/db/webhook-delivery-queue.ts';
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

const failure = (d: ClaimedDelivery, retryInMs = 0): AttemptOutcome => ({
  id: d.id,
  attempt: d.attempt,
  claim: d.claim,
  ok: false,
  statusCode: 500,
  bodyExcerpt: 'boom',
  error: null,
  retryInMs,
});

const success = (d: ClaimedDelivery): AttemptOutcome => ({
  id: d.id,
  attempt: d.attempt,
  claim: d.claim,
  ok: true,
  statusCode: 204,
  bodyExcerpt: '',
  error: null,
  retryInMs: 0,
});

/** Counts claimed attempts as sent; the ids it counted. */
const markSent = async (queue: DeliveryQueue, ...claimed: ClaimedDelivery[]) =>
  [
    ...(await queue.markSent(
      claimed.map((d) => ({ id: d.id, attempt: d.attempt, claim: d.claim })),
    )),
  ].sort();

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

  it('claims each due delivery once, carries the exact payload, and counts the attempt when sent', async () => {
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
    // Claimed is not attempted: nothing counted until the request goes out.
    const [a, b] = first as [ClaimedDelivery, ClaimedDelivery];
    expect(await row(db, a.id)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await markSent(queue, a)).toEqual([a.id]);
    expect(await row(db, a.id)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await row(db, b.id)).toMatchObject({ status: 'pending', attempts: 0 });
    // Counted once: the same claim cannot count it again.
    expect(await markSent(queue, a)).toEqual([]);
    expect(await row(db, a.id)).toMatchObject({ attempts: 1 });
  });

  it('records delivered, schedules the retry, fails after the third attempt', async () => {
    const { db } = await open();
    await seed(db, 2);
    const queue = createDeliveryQueue(db);
    const [a, b] = await queue.claim(10, 60_000);
    if (!a || !b) throw new Error('expected two deliveries');
    expect(await markSent(queue, a, b)).toEqual([a.id, b.id].sort());
    expect(await queue.record([success(a), failure(b, 0)])).toBe(2);
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
    // A refused connection never reaches sending: the record counts the attempt.
    await queue.record([
      { ...failure(b2!), statusCode: null, bodyExcerpt: null, error: 'ECONNREFUSED' },
    ]);
    expect(await row(db, b.id)).toMatchObject({
      status: 'pending',
      attempts: 2,
      last_error: 'ECONNREFUSED',
      last_response_code: null,
    });
    const [b3] = await queue.claim(10, 60_000);
    expect(b3).toMatchObject({ id: b.id, attempt: 3 });
    await markSent(queue, b3!);
    await queue.record([failure(b3!)]);
    expect(await row(db, b.id)).toMatchObject({ status: 'failed', attempts: 3 });
    expect(await queue.claim(10, 0)).toEqual([]);
  });

  it('a retry is not due before its delay', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    const [a] = await queue.claim(10, 60_000);
    await markSent(queue, a!);
    await queue.record([failure(a!, 60_000)]);
    expect(await queue.claim(10, 60_000)).toEqual([]);
  });

  it('an expired lease of a sent attempt is taken over as the next attempt; the stale outcome is ignored', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    const [a] = await queue.claim(10, 60_000);
    expect(await markSent(queue, a!)).toEqual([a!.id]);
    // The lease ends (as if the worker died while its request was out).
    await db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1`, [a!.id]);
    const [taken] = await queue.claim(10, 60_000);
    expect(taken).toMatchObject({ id: a!.id, attempt: 2 });
    // The first worker comes back late: its outcome no longer applies, nor can it count again.
    expect(await queue.record([success(a!)])).toBe(0);
    expect(await markSent(queue, a!)).toEqual([]);
    expect(await row(db, a!.id)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await markSent(queue, taken!)).toEqual([a!.id]);
    expect(await queue.record([success(taken!)])).toBe(1);
    expect(await row(db, a!.id)).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('a claim that never sent leaves the same attempt to claim again, however often', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    // Three workers in a row claim it and die before their request goes out.
    let last: ClaimedDelivery | undefined;
    for (let i = 0; i < 4; i++) {
      [last] = await queue.claim(10, 0);
      expect(last).toMatchObject({ attempt: 1 });
    }
    expect(await queue.failAbandoned()).toBe(0);
    expect(await row(db, last!.id)).toMatchObject({ status: 'pending', attempts: 0 });
    // An expired lease cannot count an attempt (another worker may hold the row by now).
    expect(await markSent(queue, last!)).toEqual([]);
    const [live] = await queue.claim(10, 60_000);
    expect(live).toMatchObject({ id: last!.id, attempt: 1 });
    // The claims before it cannot count or record any more.
    expect(await markSent(queue, last!)).toEqual([]);
    expect(await queue.record([success(last!)])).toBe(0);
    expect(await markSent(queue, live!)).toEqual([live!.id]);
    expect(await queue.record([success(live!)])).toBe(1);
    expect(await row(db, live!.id)).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('fails an abandoned third attempt that was sent once its lease ends, never trying a fourth', async () => {
    const { db } = await open();
    await seed(db, 1);
    const queue = createDeliveryQueue(db);
    let id = '';
    for (let attempt = 1; attempt <= 3; attempt++) {
      const [d] = await queue.claim(10, 60_000);
      expect(d).toMatchObject({ attempt });
      id = d!.id;
      expect(await markSent(queue, d!)).toEqual([id]);
      // The worker dies with its request out: the lease runs out.
      await db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1`, [id]);
      if (attempt < 3) expect(await queue.failAbandoned()).toBe(0);
    }
    expect(await queue.claim(10, 0)).toEqual([]);
    expect(await queue.failAbandoned()).toBe(1);
    expect(await row(db, id)).toMatchObject({ status: 'failed', attempts: 3 });
    expect((await row(db, id))?.last_error).toMatch(/stopped before recording/);
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
