/**
 * Endpoint health against a real HTTPS receiver and the real dispatcher, on every engine: the
 * attempt log and the statistics it gives; a destination whose attempts all fail is disabled by the
 * maintenance job once its failures are older than the threshold (the job's clock is moved forward,
 * the database's is not), its pending deliveries are failed and events meanwhile fail at once; a
 * re-enable replays them all and they are delivered.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createWebhookDeliveriesRepo } from '../../src/db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createWebhookHealthRepo } from '../../src/db/webhook-health.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
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

describe.each(storageEngines())('webhook endpoint health on %s', (engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('disables a destination failing for 5 days, keeps what failed, and a re-enable replays it', async () => {
    const t = await freshDatabase(engine);
    cleanups.push(() => t.drop());
    const db = t.db;
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

    let up = false;
    const receiver = await startHttpsReceiver({
      handler: () => (up ? { status: 204, body: '' } : { status: 503, body: 'down for good' }),
    });
    cleanups.push(() => receiver.close());
    const destinations = createWebhookDestinationsRepo(db, box);
    const deliveries = createWebhookDeliveriesRepo(db);
    const health = createWebhookHealthRepo(db);
    const { destination } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    let n = 0;
    const emit = (q: Queryable = db) =>
      createEventsRepo(q).insert({
        partnerId: partner.id,
        environment: 'live',
        productId: null,
        eventType: 'vault_pause',
        dedupeKey: `vault_pause:h${n}:${randomBytes(3).toString('hex')}`,
        payload: { slug: `s${n++}`, status: 'paused' },
        occurredAt: new Date(),
      });

    // A success first: statistics count it, and it is the last success.
    up = true;
    await emit();
    await waitFor(
      async () =>
        (await deliveries.list({ status: 'delivered' })).length === 1 ? true : undefined,
      10_000,
      'the first delivery',
    );
    // Then the receiver goes down: two events fail all three attempts.
    up = false;
    await emit();
    await emit();
    await waitFor(
      async () => ((await deliveries.list({ status: 'failed' })).length === 2 ? true : undefined),
      10_000,
      'two failed deliveries',
    );
    const [stats] = await health.stats([destination.id]);
    expect(stats).toMatchObject({
      destinationId: destination.id,
      disabledAt: null,
      failingSince: expect.any(Date),
      window: { attempts: 7, succeeded: 1 },
      lastSuccessAt: expect.any(Date),
      lastFailure: { statusCode: 503, error: null },
    });
    expect(stats!.window.successRate).toBeCloseTo(1 / 7, 10);
    expect(stats!.window.latencyMs).toEqual({
      p50: expect.any(Number),
      p95: expect.any(Number),
      max: expect.any(Number),
    });
    expect(stats!.window.latencyMs!.p95).toBeLessThan(10_000);
    expect(stats!.lastFailure!.at.getTime()).toBeGreaterThan(stats!.lastSuccessAt!.getTime());
    // The portal's one-statement read: the same figures, and the destination as find() reads it.
    const at = new Date();
    const joint = await health.destinationWithStats(destination.id, at);
    expect(joint?.health).toEqual((await health.stats([destination.id], at))[0]);
    expect(joint?.destination).toEqual(
      await createWebhookDestinationsRepo(db, box).find(destination.id),
    );
    expect(await health.destinationWithStats('whk_none', at)).toBeUndefined();
    // Nothing is counted in a window that ends before the first attempt.
    const [before] = await health.stats([destination.id], new Date(Date.now() - DAY));
    expect(before!.window).toEqual({
      attempts: 0,
      succeeded: 0,
      successRate: null,
      latencyMs: null,
    });

    // A pending delivery (its first attempt an hour away: made so in the event's transaction) is
    // failed, and kept, when the destination is disabled.
    const pending = await db.transaction(async (tx) => {
      const e = await emit(tx);
      await tx.query(
        `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour'
         WHERE event_id = $1`,
        [e!.id],
      );
      return e;
    });

    const logs = captureLogger();
    const maintenance = (at: number) =>
      createWebhookMaintenance({ db, logger: logs.logger, now: () => new Date(at) });
    // Four days of failures: not yet.
    expect((await maintenance(Date.now() + 4 * DAY).runOnce()).disabled).toEqual([]);
    // Past five days: disabled, with a reason a partner can act on.
    const run = await maintenance(Date.now() + 5 * DAY + 60_000).runOnce();
    expect(run.disabled).toEqual([destination.id]);
    const disabled = await destinations.find(destination.id);
    expect(disabled!.disabledAt).toBeInstanceOf(Date);
    expect(disabled!.disabledBy).toBe('health');
    expect(disabled!.disabledReason).toMatch(
      /^Disabled automatically: every delivery attempt since \S+Z failed \(5 days without a success; the last answer was HTTP 503\)\. Fix the endpoint, then re-enable/,
    );
    const [kept] = await deliveries.list({ eventId: pending!.id });
    expect(kept).toMatchObject({
      status: 'failed',
      attempts: 0,
      lastError: 'destination disabled',
    });
    // Again: nothing more to disable.
    expect((await maintenance(Date.now() + 6 * DAY).runOnce()).disabled).toEqual([]);

    // An event while disabled: a failed delivery at once, nothing sent.
    const requestsBefore = receiver.requests.length;
    const meanwhile = await emit();
    const [failedAtOnce] = await deliveries.list({ eventId: meanwhile!.id });
    expect(failedAtOnce).toMatchObject({
      status: 'failed',
      attempts: 0,
      lastError: 'destination disabled',
    });
    await expect(deliveries.replayFailed(destination.id, new Date(0))).rejects.toMatchObject({
      code: 'destination_disabled',
    });

    // The partner fixes the endpoint and re-enables it: what failed since it started failing is
    // replayed, once per event, and delivered.
    up = true;
    const enabled = await health.enable(destination.id);
    expect(enabled.failingSince).toEqual(stats!.failingSince);
    expect(enabled.replayed.map((d) => d.eventId).sort()).toEqual(
      (await deliveries.list({ status: 'failed' })).map((d) => d.eventId).sort(),
    );
    expect(enabled.replayed).toHaveLength(4);
    await waitFor(
      async () =>
        (await deliveries.list({ status: 'delivered' })).length === 5 ? true : undefined,
      10_000,
      'the replays delivered',
    );
    expect(receiver.requests.length).toBe(requestsBefore + 4);
    const [after] = await health.stats([destination.id]);
    expect(after).toMatchObject({ disabledAt: null, disabledReason: null, failingSince: null });
    await expect(health.enable(destination.id)).rejects.toMatchObject({ code: 'not_disabled' });
  });
});
