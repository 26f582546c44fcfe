/**
 * Webhook repositories on every engine: destinations (secret shown once, stored encrypted, listed by
 * fingerprint), the events → deliveries fan-out trigger, the delivery log and its replays, and
 * inbound secrets.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createInboundSecretsRepo } from '../../src/db/inbound-secrets.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import type { Environment } from '../../src/db/products.ts';
import {
  createWebhookDeliveriesRepo,
  WebhookReplayError,
} from '../../src/db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { DestinationUrlError } from '../../src/webhooks/destination-url.ts';
import {
  createSecretBox,
  MasterKeyError,
  secretFingerprint,
} from '../../src/webhooks/secret-box.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const box = createSecretBox(randomBytes(32));
const otherBox = createSecretBox(randomBytes(32));

let dedupe = 0;
function insertEvent(
  db: Queryable,
  partnerId: string,
  environment: Environment,
  eventType = 'deposit.confirmed',
) {
  dedupe++;
  return createEventsRepo(db)
    .insert({
      partnerId,
      environment,
      productId: null,
      eventType,
      dedupeKey: `test:${eventType}:${dedupe}:${randomBytes(4).toString('hex')}`,
      payload: { n: dedupe },
      occurredAt: new Date('2025-01-01T00:00:00Z'),
    })
    .then((e) => {
      if (!e) throw new Error('event not stored');
      return e;
    });
}

/** Marks deliveries as the dispatcher would, at a given moment. */
async function setStatus(
  db: Queryable,
  ids: string[],
  status: 'failed' | 'delivered',
  at?: Date,
): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries
     SET status = $2, attempts = 3, failed_at = CASE WHEN $2 = 'failed' THEN now() END,
         delivered_at = CASE WHEN $2 = 'delivered' THEN now() END,
         created_at = coalesce($3::timestamptz, created_at)
     WHERE id = ANY ($1)`,
    [ids, status, at ?? null],
  );
}

describe.each(storageEngines())('webhook repositories on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });

  async function setup() {
    const t = await freshDatabase(engine);
    opened.push(t);
    const partners = createPartnersRepo(t.db);
    const acme = await partners.create('Acme');
    const bravo = await partners.create('Bravo');
    return {
      db: t.db,
      acme: acme.id,
      bravo: bravo.id,
      destinations: createWebhookDestinationsRepo(t.db, box),
      deliveries: createWebhookDeliveriesRepo(t.db),
    };
  }

  it('adds a destination with its secret shown once and stored only encrypted', async () => {
    const { db, acme, destinations } = await setup();
    const { destination, secret } = await destinations.add({
      partnerId: acme,
      environment: 'live',
      url: 'https://hooks.example.com/in',
      eventTypes: ['deposit.confirmed', 'tvl_alert'],
    });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(destination).toMatchObject({
      id: expect.stringMatching(/^whk_/),
      partnerId: acme,
      environment: 'live',
      url: 'https://hooks.example.com/in',
      eventTypes: ['deposit.confirmed', 'tvl_alert'],
      secretFingerprint: secretFingerprint(secret),
      secretRotatedAt: null,
      removedAt: null,
    });
    expect(JSON.stringify(destination)).not.toContain(secret);
    expect(Object.keys(destination)).not.toContain('secretCiphertext');

    const listed = await destinations.list({ partnerId: acme });
    expect(listed).toEqual([destination]);
    expect(JSON.stringify(listed)).not.toContain(secret);
    expect(JSON.stringify(listed)).not.toContain('v1:');

    const { rows } = await db.query<{ secret_ciphertext: string }>(
      'SELECT secret_ciphertext FROM webhook_destinations',
    );
    expect(rows[0]!.secret_ciphertext).toMatch(/^v1:/);
    expect(rows[0]!.secret_ciphertext).not.toContain(secret.slice(6));
    expect(await destinations.signingSecret(destination.id)).toBe(secret);

    // Another master key cannot read it, and says why.
    const foreign = createWebhookDestinationsRepo(db, otherBox);
    await expect(foreign.signingSecret(destination.id)).rejects.toThrow(MasterKeyError);
    await expect(foreign.signingSecret(destination.id)).rejects.toThrow(/master key differs/);

    // No event-type filter: null (every type).
    const all = await destinations.add({
      partnerId: acme,
      environment: 'live',
      url: 'https://hooks.example.com/all',
      eventTypes: [],
    });
    expect(all.destination.eventTypes).toBeNull();
  });

  it('refuses plain HTTP and malformed URLs', async () => {
    const { acme, destinations } = await setup();
    for (const url of [
      'http://hooks.example.com',
      'ftp://hooks.example.com',
      'not a url',
      'https://u:p@hooks.example.com',
    ]) {
      await expect(
        destinations.add({ partnerId: acme, environment: 'test', url }),
        url,
      ).rejects.toThrow(DestinationUrlError);
    }
    expect(await destinations.list()).toEqual([]);
  });

  it('rotates a secret (new fingerprint, old one gone) and removes a destination', async () => {
    const { acme, destinations } = await setup();
    const first = await destinations.add({
      partnerId: acme,
      environment: 'test',
      url: 'https://hooks.example.com/a',
    });
    const rotated = await destinations.rotate(first.destination.id);
    expect(rotated).toBeDefined();
    expect(rotated!.secret).not.toBe(first.secret);
    expect(rotated!.destination.secretFingerprint).toBe(secretFingerprint(rotated!.secret));
    expect(rotated!.destination.secretFingerprint).not.toBe(first.destination.secretFingerprint);
    expect(rotated!.destination.secretRotatedAt).toBeInstanceOf(Date);
    expect(await destinations.signingSecret(first.destination.id)).toBe(rotated!.secret);

    expect(await destinations.remove(first.destination.id)).toBe(true);
    expect(await destinations.remove(first.destination.id)).toBe(false);
    expect(await destinations.rotate(first.destination.id)).toBeUndefined();
    expect(await destinations.list()).toEqual([]);
    const kept = await destinations.list({ includeRemoved: true });
    expect(kept).toHaveLength(1);
    expect(kept[0]!.removedAt).toBeInstanceOf(Date);
    expect(await destinations.rotate('whk_unknown')).toBeUndefined();
  });

  it("removing a destination fails its pending deliveries saying why first, then the last attempt's error", async () => {
    // Found by QA: a delivery that had failed an attempt kept only that error, so nothing said the
    // destination had been removed.
    const { db, acme, destinations, deliveries } = await setup();
    const id = (
      await destinations.add({
        partnerId: acme,
        environment: 'live',
        url: 'https://hooks.example.com/r',
      })
    ).destination.id;
    const tried = await insertEvent(db, acme, 'live', 'deposit.confirmed');
    const untried = await insertEvent(db, acme, 'live', 'deposit.confirmed');
    // As the dispatcher records a failed attempt that will be retried.
    await db.query(
      `UPDATE webhook_deliveries SET attempts = 1, last_error = 'connect ECONNREFUSED'
       WHERE event_id = $1`,
      [tried.id],
    );
    await destinations.remove(id);
    expect(await deliveries.list({ eventId: tried.id })).toMatchObject([
      { status: 'failed', lastError: 'destination removed; last attempt: connect ECONNREFUSED' },
    ]);
    expect(await deliveries.list({ eventId: untried.id })).toMatchObject([
      { status: 'failed', lastError: 'destination removed' },
    ]);
  });

  it('fans an event out to every matching active destination of its partner environment', async () => {
    const { db, acme, bravo, destinations, deliveries } = await setup();
    const add = (partnerId: string, environment: Environment, eventTypes?: string[]) =>
      destinations
        .add({
          partnerId,
          environment,
          url: 'https://hooks.example.com/x',
          eventTypes: eventTypes ?? null,
        })
        .then((r) => r.destination.id);
    const all = await add(acme, 'live');
    const deposits = await add(acme, 'live', ['deposit.confirmed']);
    const alerts = await add(acme, 'live', ['tvl_alert']);
    const removed = await add(acme, 'live');
    await destinations.remove(removed);
    const acmeTest = await add(acme, 'test');
    const bravoLive = await add(bravo, 'live');

    const deposit = await insertEvent(db, acme, 'live', 'deposit.confirmed');
    const made = await deliveries.list({ eventId: deposit.id });
    expect(made.map((d) => d.destinationId).sort()).toEqual([all, deposits].sort());
    for (const d of made) {
      expect(d).toMatchObject({
        eventId: deposit.id,
        eventType: 'deposit.confirmed',
        status: 'pending',
        attempts: 0,
        replayOf: null,
        lastAttemptAt: null,
        lastResponseCode: null,
        deliveredAt: null,
        failedAt: null,
      });
      expect(d.id).toMatch(/^dlv_/);
    }

    const alert = await insertEvent(db, acme, 'live', 'tvl_alert');
    expect(
      (await deliveries.list({ eventId: alert.id })).map((d) => d.destinationId).sort(),
    ).toEqual([all, alerts].sort());
    const other = await insertEvent(db, acme, 'live', 'vault_pause');
    expect((await deliveries.list({ eventId: other.id })).map((d) => d.destinationId)).toEqual([
      all,
    ]);
    const testEvent = await insertEvent(db, acme, 'test');
    expect((await deliveries.list({ eventId: testEvent.id })).map((d) => d.destinationId)).toEqual([
      acmeTest,
    ]);
    const bravoEvent = await insertEvent(db, bravo, 'live');
    expect((await deliveries.list({ eventId: bravoEvent.id })).map((d) => d.destinationId)).toEqual(
      [bravoLive],
    );
    expect(await deliveries.list({ destinationId: removed })).toEqual([]);
    // An event for a partner environment without destinations makes no delivery.
    const none = await insertEvent(db, bravo, 'test');
    expect(await deliveries.list({ eventId: none.id })).toEqual([]);

    // The log: newest first, filters, limit.
    const log = await deliveries.list();
    expect(log).toHaveLength(7);
    expect(log[0]!.eventId).toBe(bravoEvent.id);
    expect(log.at(-1)!.eventId).toBe(deposit.id);
    expect((await deliveries.list({ destinationId: all })).map((d) => d.eventId)).toEqual([
      other.id,
      alert.id,
      deposit.id,
    ]);
    expect(await deliveries.list({ status: 'failed' })).toEqual([]);
    expect(await deliveries.list({ limit: 2 })).toHaveLength(2);
    // By event type, by creation time, and page after page from a cursor, in the same order.
    expect(
      (await deliveries.list({ destinationId: all, eventType: 'tvl_alert' })).map((d) => d.eventId),
    ).toEqual([alert.id]);
    const future = new Date(Date.now() + 60_000);
    expect(await deliveries.list({ createdSince: future })).toEqual([]);
    const pages: string[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await deliveries.list({ limit: 3, ...(before ? { before } : {}) });
      pages.push(...page.map((d) => d.id));
      if (page.length < 3) break;
      before = page.at(-1)!.id;
    }
    expect(pages).toEqual(log.map((d) => d.id));
    expect(await deliveries.list({ before: 'dlv_none' })).toEqual([]);
  });

  it('fans a batch of events out in the statement that stores them', async () => {
    const { db, acme, destinations, deliveries } = await setup();
    await destinations.add({ partnerId: acme, environment: 'live', url: 'https://a.example.com' });
    await destinations.add({ partnerId: acme, environment: 'live', url: 'https://b.example.com' });
    await db.query(
      `INSERT INTO events (id, partner_id, environment, event_type, dedupe_key, payload, occurred_at)
       SELECT 'evt_batch' || g, $1, 'live', 'apy_change', 'batch:' || g, '{}', now()
       FROM generate_series(1, 5) g`,
      [acme],
    );
    expect(await deliveries.list({ status: 'pending' })).toHaveLength(10);
  });

  it('replays an event to one destination or to every subscribed one', async () => {
    const { db, acme, bravo, destinations, deliveries } = await setup();
    const add = (partnerId: string, eventTypes?: string[]) =>
      destinations
        .add({
          partnerId,
          environment: 'live',
          url: 'https://hooks.example.com',
          eventTypes: eventTypes ?? null,
        })
        .then((r) => r.destination.id);
    const a = await add(acme);
    const b = await add(acme, ['deposit.confirmed']);
    const alertsOnly = await add(acme, ['tvl_alert']);
    const bravoDest = await add(bravo);
    const event = await insertEvent(db, acme, 'live');
    const original = await deliveries.list({ eventId: event.id, destinationId: a });
    await setStatus(db, [original[0]!.id], 'failed');

    const one = await deliveries.replayEvent(event.id, a);
    expect(one).toHaveLength(1);
    expect(one[0]).toMatchObject({
      eventId: event.id,
      eventType: 'deposit.confirmed',
      destinationId: a,
      status: 'pending',
      attempts: 0,
      replayOf: original[0]!.id,
      lastAttemptAt: null,
    });
    expect(one[0]!.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now() + 5_000);
    // The original row is untouched.
    expect(
      (await deliveries.list({ eventId: event.id, destinationId: a, status: 'failed' }))[0]!.id,
    ).toBe(original[0]!.id);

    // A second replay links to the latest earlier one: the first replay.
    const two = await deliveries.replayEvent(event.id, a);
    expect(two[0]!.replayOf).toBe(one[0]!.id);

    // Without a destination: every active one subscribed to the type.
    const fanned = await deliveries.replayEvent(event.id);
    expect(fanned.map((d) => d.destinationId).sort()).toEqual([a, b].sort());
    expect(fanned.find((d) => d.destinationId === a)!.replayOf).toBe(two[0]!.id);

    const refusal = (destination: string | undefined, code: string, id = event.id) =>
      expect(deliveries.replayEvent(id, destination)).rejects.toMatchObject({
        name: 'WebhookReplayError',
        code,
      });
    await refusal(undefined, 'event_not_found', 'evt_nope');
    await refusal('whk_nope', 'destination_not_found');
    await refusal(bravoDest, 'destination_mismatch');
    await refusal(alertsOnly, 'not_subscribed');
    await destinations.remove(b);
    await refusal(b, 'destination_removed');
    await expect(deliveries.replayEvent(event.id, b)).rejects.toBeInstanceOf(WebhookReplayError);
    expect((await deliveries.replayEvent(event.id)).map((d) => d.destinationId)).toEqual([a]);

    // A destination of another environment of the same partner does not match either.
    const testDest = await destinations.add({
      partnerId: acme,
      environment: 'test',
      url: 'https://hooks.example.com',
    });
    await refusal(testDest.destination.id, 'destination_mismatch');

    // An event nobody subscribes to replays to nothing.
    const lonely = await insertEvent(db, bravo, 'test');
    expect(await deliveries.replayEvent(lonely.id)).toEqual([]);
  });

  it('replays the failed deliveries of a destination since a moment, once per event', async () => {
    const { db, acme, destinations, deliveries } = await setup();
    const dest = (
      await destinations.add({ partnerId: acme, environment: 'live', url: 'https://h.example.com' })
    ).destination.id;
    const other = (
      await destinations.add({ partnerId: acme, environment: 'live', url: 'https://o.example.com' })
    ).destination.id;
    const rowOf = async (eventId: string, destinationId = dest) =>
      (await deliveries.list({ eventId, destinationId }))[0]!.id;

    const old = new Date('2024-12-01T00:00:00Z');
    const since = new Date('2025-01-01T00:00:00Z');
    const recent = new Date('2025-01-02T00:00:00Z');

    // e1: failed before `since` → not replayed.
    const e1 = await insertEvent(db, acme, 'live');
    await setStatus(db, [await rowOf(e1.id)], 'failed', old);
    // e2: failed twice since (original and a replay) → replayed once, of the latest failure.
    const e2 = await insertEvent(db, acme, 'live');
    await setStatus(db, [await rowOf(e2.id)], 'failed', recent);
    const e2Replay = (await deliveries.replayEvent(e2.id, dest))[0]!;
    await setStatus(db, [e2Replay.id], 'failed');
    // e3: failed since, then delivered by a later replay → skipped.
    const e3 = await insertEvent(db, acme, 'live');
    await setStatus(db, [await rowOf(e3.id)], 'failed', recent);
    const e3Replay = (await deliveries.replayEvent(e3.id, dest))[0]!;
    await setStatus(db, [e3Replay.id], 'delivered');
    // e4: failed since, a later replay still pending → skipped.
    const e4 = await insertEvent(db, acme, 'live');
    await setStatus(db, [await rowOf(e4.id)], 'failed', recent);
    await deliveries.replayEvent(e4.id, dest);
    // e5: delivered → not replayed. e6: still pending → not replayed.
    const e5 = await insertEvent(db, acme, 'live');
    await setStatus(db, [await rowOf(e5.id)], 'delivered', recent);
    await insertEvent(db, acme, 'live');
    // e7: failed since at exactly `since` → replayed; its failure at the other destination is not.
    const e7 = await insertEvent(db, acme, 'live');
    await setStatus(db, [await rowOf(e7.id), await rowOf(e7.id, other)], 'failed', since);

    const result = await deliveries.replayFailed(dest, since);
    expect(result.count).toBe(2);
    expect(
      result.deliveries.map((d) => [d.eventId, d.replayOf, d.status, d.attempts, d.destinationId]),
    ).toEqual([
      [e2.id, e2Replay.id, 'pending', 0, dest],
      [e7.id, expect.stringMatching(/^dlv_/), 'pending', 0, dest],
    ]);
    const e7Failed = (
      await deliveries.list({ eventId: e7.id, destinationId: dest, status: 'failed' })
    )[0]!;
    expect(result.deliveries[1]!.replayOf).toBe(e7Failed.id);

    // Run again: the new pending rows stand after each failure, so nothing is replayed twice.
    expect((await deliveries.replayFailed(dest, since)).count).toBe(0);
    expect((await deliveries.list({ destinationId: other, status: 'pending' })).length).toBe(6);

    await expect(deliveries.replayFailed('whk_nope', since)).rejects.toMatchObject({
      code: 'destination_not_found',
    });
    await destinations.remove(other);
    await expect(deliveries.replayFailed(other, since)).rejects.toMatchObject({
      code: 'destination_removed',
    });
  });

  it('sets and rotates the inbound secret of a partner environment', async () => {
    const { db, acme, bravo } = await setup();
    const secrets = createInboundSecretsRepo(db, box);
    const first = await secrets.set(acme, 'live');
    expect(first).toEqual({
      secret: expect.stringMatching(/^whsec_/),
      rotated: false,
      previousExpiresAt: null,
    });
    expect(await secrets.get(acme, 'live')).toBe(first.secret);
    expect(await secrets.get(acme, 'test')).toBeUndefined();

    const second = await secrets.set(acme, 'live');
    expect(second.rotated).toBe(true);
    expect(second.secret).not.toBe(first.secret);
    expect(await secrets.get(acme, 'live')).toBe(second.secret);
    // Without a grace period the replaced secret no longer verifies; with one, it does until then.
    expect(await secrets.keys(acme, 'live')).toEqual({
      current: second.secret,
      previous: undefined,
    });
    const third = await secrets.set(acme, 'live', { graceMs: 60_000 });
    expect(third.previousExpiresAt).toBeInstanceOf(Date);
    expect(await secrets.keys(acme, 'live')).toEqual({
      current: third.secret,
      previous: { secret: second.secret, expiresAt: third.previousExpiresAt },
    });
    await expect(secrets.set(acme, 'live', { graceMs: -1 })).rejects.toThrow(RangeError);
    await secrets.set(bravo, 'test');

    const listed = await secrets.list();
    expect(listed.map((s) => [s.partnerId, s.environment])).toEqual(
      [
        [acme, 'live'],
        [bravo, 'test'],
      ].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
    );
    const acmeLive = (await secrets.list(acme))[0]!;
    expect(acmeLive.fingerprint).toBe(secretFingerprint(third.secret));
    expect(acmeLive.previous?.fingerprint).toBe(secretFingerprint(second.secret));
    expect(acmeLive.rotatedAt).toBeInstanceOf(Date);
    expect(JSON.stringify(listed)).not.toContain(third.secret);
    expect(JSON.stringify(listed)).not.toContain(second.secret);

    await expect(createInboundSecretsRepo(db, otherBox).get(acme, 'live')).rejects.toThrow(
      MasterKeyError,
    );
  });
});
