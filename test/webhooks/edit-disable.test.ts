/**
 * Editing a destination and disabling it by hand (src/db/webhook-destinations.ts update(),
 * webhook-health.ts disable()), on every engine, against the real dispatcher and real HTTPS
 * receivers: a new URL takes the pending retries and clears the old endpoint's health record, new
 * event types drive the fan-out, bad input is refused with the same checks as add(); a destination
 * disabled by hand sends nothing pending (its deliveries failed and kept, events meanwhile failed at
 * once), keeps its reason against the health job, and re-enabling replays what failed meanwhile.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Database, Queryable } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createWebhookDeliveriesRepo } from '../../src/db/webhook-deliveries.ts';
import {
  createWebhookDestinationsRepo,
  DestinationEventTypesError,
} from '../../src/db/webhook-destinations.ts';
import { createWebhookHealthRepo } from '../../src/db/webhook-health.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { DestinationUrlError } from '../../src/webhooks/destination-url.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { createWebhookMaintenance } from '../../src/webhooks/maintenance.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import { freshDatabase, storageEngines } from '../helpers/db.ts';
import { startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';

const box = createSecretBox(randomBytes(32));
const DAY = 86_400_000;
const WAIT_MS = 20_000;

describe.each(storageEngines())('editing and disabling a destination on %s', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setUp() {
    const t = await freshDatabase(engine);
    cleanups.push(() => t.drop());
    const db: Database = t.db;
    const partner = await createPartnersRepo(db).create('Acme');
    const sender = createSender({
      policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
      extraCa: testCaPem(),
    });
    cleanups.push(() => sender.close());
    const job = createDispatcher({
      db,
      logger: captureLogger().logger,
      sender,
      secretBox: box,
      retryDelaysMs: [30, 30],
      pollMs: 20,
    }).job();
    job.start();
    cleanups.push(() => job.stop());
    let n = 0;
    const emit = (eventType = 'vault_pause', q: Queryable = db) =>
      createEventsRepo(q).insert({
        partnerId: partner.id,
        environment: 'live',
        productId: null,
        eventType,
        dedupeKey: `${eventType}:e${n}:${randomBytes(3).toString('hex')}`,
        payload: { slug: `s${n++}`, status: 'paused' },
        occurredAt: new Date(),
      });
    const deliveries = createWebhookDeliveriesRepo(db);
    const count = async (status: 'delivered' | 'failed', destinationId: string) =>
      (await deliveries.list({ status, destinationId })).length;
    const until = (what: string, probe: () => Promise<boolean>) =>
      waitFor(async () => ((await probe()) ? true : undefined), WAIT_MS, what);
    return {
      db,
      partner,
      emit,
      count,
      until,
      deliveries,
      destinations: createWebhookDestinationsRepo(db, box),
      health: createWebhookHealthRepo(db),
    };
  }

  it('edits the URL and event types: checked as on creation, applied from now on', async () => {
    const { db, partner, emit, count, until, deliveries, destinations, health } = await setUp();
    const oldReceiver = await startHttpsReceiver({
      handler: () => ({ status: 503, body: 'old one is gone' }),
    });
    cleanups.push(() => oldReceiver.close());
    const newReceiver = await startHttpsReceiver({ host: '127.0.0.1' });
    cleanups.push(() => newReceiver.close());
    const { destination } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: `${oldReceiver.url}/hook`,
      eventTypes: ['vault_pause'],
    });

    // The same checks as add(), and nothing changed by a refusal.
    await expect(
      destinations.update(destination.id, { url: 'http://hooks.example.com/x' }),
    ).rejects.toThrow(DestinationUrlError);
    await expect(
      destinations.update(destination.id, { url: 'https://user:pw@hooks.example.com/x' }),
    ).rejects.toThrow(/must not carry credentials/);
    await expect(
      destinations.update(destination.id, { eventTypes: ['vault_pause', 'no.such'] }),
    ).rejects.toThrow(DestinationEventTypesError);
    await expect(destinations.update(destination.id, {})).rejects.toThrow(TypeError);
    expect(await destinations.update('whk_nope', { url: 'https://x.example.com' })).toBeUndefined();
    expect(await destinations.find(destination.id)).toMatchObject({
      url: `${oldReceiver.url}/hook`,
      eventTypes: ['vault_pause'],
    });

    // The old endpoint fails an event: the destination is failing.
    await emit();
    await until('a failed delivery', async () => (await count('failed', destination.id)) === 1);
    const [failing] = await health.stats([destination.id]);
    expect(failing!.failingSince).toBeInstanceOf(Date);

    // A pending delivery (its first attempt an hour away) waits when the URL changes.
    const pending = await db.transaction(async (tx) => {
      const e = await emit('vault_pause', tx);
      await tx.query(
        `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'
         WHERE event_id = $1`,
        [e!.id],
      );
      return e!;
    });

    // A new URL: a new endpoint, so the old one's failures no longer count against it.
    const moved = await destinations.update(destination.id, { url: `${newReceiver.url}/v2` });
    expect(moved).toMatchObject({ url: `${newReceiver.url}/v2`, eventTypes: ['vault_pause'] });
    const [fresh] = await health.stats([destination.id]);
    expect(fresh!.failingSince).toBeNull();
    // The pending delivery goes to the new URL when it is due.
    await db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE event_id = $1`, [
      pending.id,
    ]);
    await until('the pending delivery sent', async () => newReceiver.requests.length === 1);
    expect(newReceiver.requests[0]!.url).toBe('/v2');
    expect(newReceiver.requests[0]!.headers['x-service-event-id']).toBe(pending.id);

    // New event types: the fan-out follows them for events stored after the change.
    const retyped = await destinations.update(destination.id, {
      eventTypes: ['apy_change', 'tvl_alert', 'apy_change'],
    });
    expect(retyped!.eventTypes).toEqual(['apy_change', 'tvl_alert']);
    const skipped = await emit('vault_pause');
    const taken = await emit('tvl_alert');
    expect(await deliveries.list({ eventId: skipped!.id })).toEqual([]);
    expect(await deliveries.list({ eventId: taken!.id })).toHaveLength(1);
    // [] or null: every type again.
    expect((await destinations.update(destination.id, { eventTypes: [] }))!.eventTypes).toBeNull();
    const any = await emit('vault_pause');
    expect(await deliveries.list({ eventId: any!.id })).toHaveLength(1);
    await until('both delivered', async () => newReceiver.requests.length === 3);

    // A removed destination cannot be edited.
    await destinations.remove(destination.id);
    expect(
      await destinations.update(destination.id, { url: 'https://x.example.com' }),
    ).toBeUndefined();
    // The old endpoint saw only the three attempts of the first event.
    expect(oldReceiver.requests).toHaveLength(3);
  });

  it('disables by hand: nothing pending is sent, the reason says who, re-enabling replays', async () => {
    const { db, partner, emit, count, until, deliveries, destinations, health } = await setUp();
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const { destination } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    await emit();
    await until('the first delivery', async () => (await count('delivered', destination.id)) === 1);

    // A delivery whose first attempt is an hour away, then the destination is disabled.
    const pending = await db.transaction(async (tx) => {
      const e = await emit('vault_pause', tx);
      await tx.query(
        `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'
         WHERE event_id = $1`,
        [e!.id],
      );
      return e!;
    });
    await expect(
      health.disable(destination.id, { by: 'ana@acme.example', note: 'x'.repeat(201) }),
    ).rejects.toMatchObject({ code: 'invalid_note' });
    const off = await health.disable(destination.id, {
      by: 'ana@acme.example',
      note: '  maintenance window  ',
    });
    expect(off.failedPending).toBe(1);
    expect(off.reason).toBe(
      `Disabled by ana@acme.example on ${off.disabledAt.toISOString()} (“maintenance window”). ` +
        'Nothing is sent to it until it is re-enabled; what failed meanwhile is then replayed.',
    );
    expect(await destinations.find(destination.id)).toMatchObject({
      disabledBy: 'manual',
      disabledAt: off.disabledAt,
      disabledReason: off.reason,
    });
    const [stats] = await health.stats([destination.id]);
    expect(stats).toMatchObject({ disabledBy: 'manual', disabledReason: off.reason });
    const [kept] = await deliveries.list({ eventId: pending.id });
    expect(kept).toMatchObject({
      status: 'failed',
      attempts: 0,
      lastError: 'destination disabled',
    });
    // An event meanwhile: failed at once, never sent.
    const meanwhile = await emit();
    const [failedAtOnce] = await deliveries.list({ eventId: meanwhile!.id });
    expect(failedAtOnce).toMatchObject({ status: 'failed', lastError: 'destination disabled' });
    // The pending one comes due: still nothing is claimed for it.
    await db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE event_id = $1`, [
      pending.id,
    ]);
    // A test event is still sent on request (to check the endpoint before re-enabling): once it
    // is delivered, the dispatcher has polled past the pending one, which must not have been sent.
    await deliveries.enqueuePing(destination.id);
    await until('the ping delivered', async () => (await count('delivered', destination.id)) === 2);
    expect(receiver.requests.map((r) => r.headers['x-service-event'])).toEqual([
      'vault_pause',
      'ping',
    ]);

    // Disabled twice, or a removed one: refused in words. The health job leaves it alone.
    await expect(health.disable(destination.id, { by: 'bob' })).rejects.toMatchObject({
      code: 'already_disabled',
      message: `destination ${destination.id} is already disabled`,
    });
    await expect(health.disable('whk_nope', { by: 'bob' })).rejects.toMatchObject({
      code: 'destination_not_found',
    });
    const maintenance = createWebhookMaintenance({
      db,
      logger: captureLogger().logger,
      now: () => new Date(Date.now() + 30 * DAY),
    });
    expect((await maintenance.runOnce()).disabled).toEqual([]);
    expect((await destinations.find(destination.id))!.disabledReason).toBe(off.reason);

    // Re-enabled: the two that failed while disabled are replayed and delivered.
    const on = await health.enable(destination.id);
    expect(on.replayed.map((d) => d.eventId).sort()).toEqual([pending.id, meanwhile!.id].sort());
    await until(
      'the replays delivered',
      async () => (await count('delivered', destination.id)) === 4,
    );
    expect(await destinations.find(destination.id)).toMatchObject({
      disabledAt: null,
      disabledBy: null,
      disabledReason: null,
    });
    await destinations.remove(destination.id);
    await expect(health.disable(destination.id, { by: 'bob' })).rejects.toMatchObject({
      code: 'destination_removed',
    });
  });

  it('keeps the health job’s reason: a destination disabled automatically is not disabled again', async () => {
    const { partner, emit, count, until, destinations, health } = await setUp();
    const receiver = await startHttpsReceiver({ handler: () => ({ status: 500 }) });
    cleanups.push(() => receiver.close());
    const { destination } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    await emit();
    await until('a failed delivery', async () => (await count('failed', destination.id)) === 1);
    const [auto] = await health.disableFailing({ afterMs: 0 });
    expect(auto).toMatchObject({
      id: destination.id,
      reason: expect.stringMatching(/^Disabled automatically/),
    });
    expect((await destinations.find(destination.id))!.disabledBy).toBe('health');
    await expect(health.disable(destination.id, { by: 'ana' })).rejects.toMatchObject({
      code: 'already_disabled',
    });
    // Editing a disabled destination keeps its failing_since: re-enabling replays from it.
    const before = (await health.stats([destination.id]))[0]!.failingSince;
    await destinations.update(destination.id, { url: `${receiver.url}/fixed` });
    expect((await health.stats([destination.id]))[0]!.failingSince).toEqual(before);
  });
});
