/**
 * verifyWebhook against real deliveries: the service's own dispatcher signs and posts events to a
 * real HTTPS receiver (test CA, loopback allowed), and the SDK verifies what arrived, raw bytes and
 * headers exactly as received, the way a partner's handler would. The standardwebhooks package
 * verifies the same deliveries, so the SDK and an independent client agree. Also: a rotation (both
 * secrets verify during the grace period), a replay (same webhook-id), and an event type the SDK
 * does not know (returned as unknown, not refused).
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventsRepo } from '../../../src/db/events.ts';
import { createPartnersRepo } from '../../../src/db/partners.ts';
import { createWebhookDeliveriesRepo } from '../../../src/db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../../../src/db/webhook-destinations.ts';
import { createAddressPolicy, parseCidrList } from '../../../src/webhooks/address-policy.ts';
import { createDispatcher } from '../../../src/webhooks/dispatcher.ts';
import { createSecretBox } from '../../../src/webhooks/secret-box.ts';
import { createSender } from '../../../src/webhooks/sender.ts';
import { freshDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import {
  type HttpsReceiver,
  startHttpsReceiver,
  testCaPem,
} from '../../../test/helpers/https-receiver.ts';
import { captureLogger } from '../../../test/helpers/logs.ts';
import { waitFor } from '../../../test/helpers/process.ts';
import { verifyWebhook, WebhookVerificationError } from '../src/index.ts';

const box = createSecretBox(randomBytes(32));

describe('verifyWebhook on real deliveries from the dispatcher', () => {
  let t: TestDatabase;
  let receiver: HttpsReceiver;
  const stops: Array<() => unknown> = [];
  let emit: (type: string, payload: Record<string, unknown>) => Promise<{ id: string } | undefined>;
  let destinations: ReturnType<typeof createWebhookDestinationsRepo>;
  let partnerId: string;

  beforeAll(async () => {
    t = await freshDatabase('pglite');
    receiver = await startHttpsReceiver();
    partnerId = (await createPartnersRepo(t.db).create('Acme SDK')).id;
    const sender = createSender({
      policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
      extraCa: testCaPem(),
    });
    stops.push(() => sender.close());
    const job = createDispatcher({
      db: t.db,
      logger: captureLogger().logger,
      sender,
      secretBox: box,
      retryDelaysMs: [50, 50],
      pollMs: 20,
    }).job();
    job.start();
    stops.push(() => job.stop());
    const events = createEventsRepo(t.db);
    emit = (eventType, payload) =>
      events.insert({
        partnerId,
        environment: 'live',
        productId: null,
        eventType,
        dedupeKey: `${eventType}:${randomBytes(6).toString('hex')}`,
        payload,
        occurredAt: new Date(),
      });
    destinations = createWebhookDestinationsRepo(t.db, box);
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await receiver?.close();
    await t?.drop();
  });

  /** The n-th request the receiver got at `path` for one event. */
  const received = (path: string, eventId: string, n = 0) =>
    waitFor(
      () =>
        receiver.requests.filter((r) => r.url === path && r.headers['webhook-id'] === eventId)[n],
      10_000,
      `delivery ${n + 1} of ${eventId} at ${path}`,
    );

  /** Emits one event and returns the request the destination at `path` got for it. */
  async function deliver(path: string, type: string, payload: Record<string, unknown>) {
    const event = (await emit(type, payload))!;
    const got = await received(path, event.id);
    return { event, body: got.body, headers: got.headers };
  }

  it('verifies a deposit.confirmed as delivered and returns the typed event', async () => {
    const { secret } = await destinations.add({
      partnerId,
      environment: 'live',
      url: `${receiver.url}/hooks`,
      eventTypes: ['deposit.confirmed'],
    });
    const payload = {
      slug: 'acme-live-usdc-core',
      chain_id: 31337,
      tx_hash: `0x${'ab'.repeat(32)}`,
      block_number: 42,
      log_index: 0,
      user_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      amount: '250.5',
      shares: '250.5',
      asset_symbol: 'USDC',
      occurred_at: new Date().toISOString(),
    };
    const { event, body, headers } = await deliver('/hooks', 'deposit.confirmed', payload);

    const verified = await verifyWebhook(body, headers, secret);
    expect(verified).toMatchObject({ known: true, type: 'deposit.confirmed', id: event.id });
    expect(verified.data).toEqual(payload);
    expect(Math.abs(verified.timestamp.getTime() - Date.now())).toBeLessThan(60_000);
    if (verified.known && verified.type === 'deposit.confirmed') {
      // Typed: the catalogue's fields are reachable without a cast.
      expect(verified.data.tx_hash).toBe(payload.tx_hash);
    }
    // The same bytes as a string and through Fetch Headers verify too.
    const fetchHeaders = new Headers(headers as Record<string, string>);
    expect((await verifyWebhook(body.toString('utf8'), fetchHeaders, secret)).id).toBe(event.id);
    // An independent client agrees.
    expect(
      new Webhook(secret).verify(body.toString('utf8'), headers as Record<string, string>),
    ).toEqual(payload);
    // The parsed body is refused with the reason; a changed byte does not verify.
    await expect(
      verifyWebhook(JSON.parse(body.toString()) as never, headers, secret),
    ).rejects.toMatchObject({ code: 'webhook_body_not_raw' });
    const changed = Buffer.from(body);
    changed[changed.length - 2] = changed[changed.length - 2]! ^ 1;
    await expect(verifyWebhook(changed, headers, secret)).rejects.toMatchObject({
      code: 'webhook_signature_mismatch',
    });
    // Another destination's secret does not verify it.
    const other = (await destinations.add({ partnerId, environment: 'test', url: receiver.url }))
      .secret;
    await expect(verifyWebhook(body, headers, other)).rejects.toBeInstanceOf(
      WebhookVerificationError,
    );
  });

  it('a rotation: both secrets verify during the grace period; a replay keeps its id', async () => {
    const { destination, secret: old } = await destinations.add({
      partnerId,
      environment: 'live',
      url: `${receiver.url}/rotating`,
      eventTypes: ['vault_pause'],
    });
    const rotated = (await destinations.rotate(destination.id, { graceMs: 60 * 60_000 }))!;
    const during = await deliver('/rotating', 'vault_pause', {
      slug: 'acme-live-usdc-boost',
      status: 'paused',
    });
    expect(during.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect((await verifyWebhook(during.body, during.headers, old)).id).toBe(during.event.id);
    expect((await verifyWebhook(during.body, during.headers, rotated.secret)).id).toBe(
      during.event.id,
    );
    expect((await verifyWebhook(during.body, during.headers, [old, rotated.secret])).type).toBe(
      'vault_pause',
    );

    await createWebhookDeliveriesRepo(t.db).replayEvent(during.event.id, destination.id);
    const replay = await received('/rotating', during.event.id, 1);
    const again = await verifyWebhook(replay.body, replay.headers, rotated.secret);
    // A handler that dedupes by id sees the same event.
    expect(again.id).toBe(during.event.id);
  });

  it('an event type the SDK does not know is returned as unknown, with its data', async () => {
    const { secret } = await destinations.add({
      partnerId,
      environment: 'live',
      url: `${receiver.url}/all`,
    });
    const { event, body, headers } = await deliver('/all', 'future.event', { hello: 'partner' });
    const verified = await verifyWebhook(body, headers, secret);
    expect(verified).toEqual({
      id: event.id,
      timestamp: expect.any(Date),
      known: false,
      type: 'future.event',
      data: { hello: 'partner' },
    });
  });
});
