/**
 * The dispatcher against real HTTPS receivers (test CA, loopback allow-listed) on every engine:
 * what a receiver gets and can verify, the retry schedule to `failed`, a receiver slower than the
 * 10 s limit, event-type filters, and rotation.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, type TestContext } from 'vitest';
import type { Database } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createWebhookDeliveriesRepo } from '../../src/db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createDispatcher, retryDelay } from '../../src/webhooks/dispatcher.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender, type Sender } from '../../src/webhooks/sender.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';

const box = createSecretBox(randomBytes(32));

/** An independent verifier, as a partner would write it: HMAC over the raw bytes, constant time. */
function verifies(secret: string, raw: Buffer, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !/^[0-9a-f]{64}$/.test(header)) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(header, 'hex'));
}

interface Delivery {
  status: string;
  attempts: number;
  last_response_code: number | null;
  last_response_body: string | null;
  last_error: string | null;
  delivered_at: Date | null;
  failed_at: Date | null;
}

const deliveries = async (db: Database) =>
  (
    await db.query<Delivery & { id: string; event_id: string; destination_id: string }>(
      'SELECT * FROM webhook_deliveries ORDER BY created_at, id',
    )
  ).rows;

type Cleanups = Array<() => Promise<void>>;

/** A list of cleanups run (last first) when the current test finishes, passed or not. */
function cleanupsOf(onTestFinished: TestContext['onTestFinished']): Cleanups {
  const cleanups: Cleanups = [];
  onTestFinished(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return cleanups;
}

describe.each(storageEngines())('webhook dispatcher on %s', (engine) => {
  // The tests of this block run concurrently (it.concurrent): each has its own database, sender,
  // dispatcher and receivers, and they mostly wait (on receivers, retry delays, the 10 s limit).
  // So cleanups are per test, run in reverse order when the test finishes.
  async function setup(cleanups: Cleanups, options: { timeoutMs?: number; retryMs?: number } = {}) {
    const t: TestDatabase = await freshDatabase(engine);
    cleanups.push(() => t.drop());
    const db = t.db;
    const partner = await createPartnersRepo(db).create(`P-${randomBytes(3).toString('hex')}`);
    const sender: Sender = createSender({
      policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
      extraCa: testCaPem(),
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    });
    cleanups.push(() => sender.close());
    const retry = options.retryMs ?? 50;
    const dispatcher = createDispatcher({
      db,
      logger: captureLogger().logger,
      sender,
      secretBox: box,
      retryDelaysMs: [retry, retry],
      pollMs: 20,
    });
    const job = dispatcher.job();
    job.start();
    cleanups.push(() => job.stop());
    const events = createEventsRepo(db);
    let n = 0;
    const emit = (
      eventType: string,
      payload: Record<string, unknown>,
      environment: 'live' | 'test' = 'live',
    ) =>
      events.insert({
        partnerId: partner.id,
        environment,
        productId: null,
        eventType,
        dedupeKey: `${eventType}:${n++}:${randomBytes(4).toString('hex')}`,
        payload,
        occurredAt: new Date(),
      });
    const destinations = createWebhookDestinationsRepo(db, box);
    return { db, partner, emit, destinations, job };
  }

  // First: it waits the longest (the 10 s limit), so the others run meanwhile.
  if (engine === 'pglite') {
    it.concurrent('a receiver slower than 10 s fails the attempt (the real default limit)', async ({
      expect,
      onTestFinished,
    }) => {
      const cleanups = cleanupsOf(onTestFinished);
      const { db, partner, emit, destinations } = await setup(cleanups, { retryMs: 60_000 });
      const receiver = await startHttpsReceiver({
        handler: () => ({ status: 200, delayMs: 10_800 }),
      });
      cleanups.push(() => receiver.close());
      await destinations.add({ partnerId: partner.id, environment: 'live', url: receiver.url });
      const started = Date.now();
      await emit('vault_pause', {});
      const [row] = await waitFor(
        async () => {
          const rows = await deliveries(db);
          return rows[0]?.last_error ? rows : undefined;
        },
        40_000,
        'the timed-out attempt',
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(9_900);
      expect(row).toMatchObject({ status: 'pending', attempts: 1, last_response_code: null });
      expect(row?.last_error).toMatch(/timed out/);
    }, 60_000);
  }

  it.concurrent('delivers the exact payload, signed, with the spec headers, once', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations, job } = await setup(cleanups);
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const { destination, secret } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: `${receiver.url}/hooks?src=test`,
    });
    const payload = { slug: 'usdc-core', amount: '1250.5', previous_apy: 0.061234, note: 'é ✓' };
    const event = await emit('deposit.confirmed', payload);
    await waitFor(() => (receiver.requests.length > 0 ? true : undefined), 30_000, 'a delivery');
    const [got] = receiver.requests;
    expect(got?.body.toString('utf8')).toBe(event?.payload);
    expect(JSON.parse(got!.body.toString('utf8'))).toEqual(payload);
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.headers['x-service-event']).toBe('deposit.confirmed');
    expect(got?.headers['user-agent']).toMatch(/^partner-yield-service-webhooks\//);
    expect(verifies(secret, got!.body, got?.headers['x-service-signature'])).toBe(true);
    // A body re-serialised by the receiver would not verify: the signature is over the raw bytes.
    expect(
      verifies(
        secret,
        Buffer.from(JSON.stringify(JSON.parse(got!.body.toString()), null, 1)),
        got?.headers['x-service-signature'],
      ),
    ).toBe(false);
    const [row] = await waitFor(
      async () => {
        const rows = await deliveries(db);
        return rows[0]?.status === 'delivered' ? rows : undefined;
      },
      30_000,
      'delivered status',
    );
    expect(row).toMatchObject({
      destination_id: destination.id,
      attempts: 1,
      last_response_code: 200,
    });
    expect(row?.delivered_at).toBeInstanceOf(Date);
    // Nothing more goes out: stopped (attempts in flight finished and recorded), the dispatcher has
    // sent one request and recorded one attempt. No sleep that a loaded machine could outlast.
    await job.stop();
    expect(receiver.requests).toHaveLength(1);
    expect((await deliveries(db)).map((d) => d.attempts)).toEqual([1]);
  });

  it.concurrent('a receiver answering 500 gets three attempts, then the delivery is failed', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations, job } = await setup(cleanups, { retryMs: 100 });
    const receiver = await startHttpsReceiver({
      handler: () => ({ status: 500, body: `{"error":"down"}${'x'.repeat(2000)}` }),
    });
    cleanups.push(() => receiver.close());
    await destinations.add({ partnerId: partner.id, environment: 'live', url: receiver.url });
    await emit('vault_pause', { hello: 1 });
    const [row] = await waitFor(
      async () => {
        const rows = await deliveries(db);
        return rows[0]?.status === 'failed' ? rows : undefined;
      },
      30_000,
      'failed status',
    );
    expect(row).toMatchObject({ attempts: 3, last_response_code: 500, last_error: null });
    expect(row?.last_response_body).toHaveLength(1024);
    expect(row?.last_response_body?.startsWith('{"error":"down"}')).toBe(true);
    expect(row?.failed_at).toBeInstanceOf(Date);
    await job.stop(); // a failed delivery is never attempted again: three requests in all
    expect(receiver.requests).toHaveLength(3);
    expect((await deliveries(db)).map((d) => d.attempts)).toEqual([3]);
    // The three attempts were spaced by the retry delay, not sent in one burst.
    const times = receiver.requests.map((r) => r.receivedAt);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(80);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(80);
  });

  it.concurrent('a failed delivery replayed by the operator gets three fresh attempts and is delivered', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations } = await setup(cleanups, { retryMs: 50 });
    let calls = 0;
    const receiver = await startHttpsReceiver({
      handler: () => ({ status: ++calls <= 3 ? 500 : 200 }),
    });
    cleanups.push(() => receiver.close());
    await destinations.add({ partnerId: partner.id, environment: 'live', url: receiver.url });
    const event = await emit('vault_pause', { replay: true });
    const [failed] = await waitFor(
      async () => {
        const rows = await deliveries(db);
        return rows[0]?.status === 'failed' ? rows : undefined;
      },
      30_000,
      'failed status',
    );
    const [replay] = await createWebhookDeliveriesRepo(db).replayEvent(event!.id);
    expect(replay).toMatchObject({ status: 'pending', attempts: 0, replayOf: failed!.id });
    const rows = await waitFor(
      async () => {
        const all = await deliveries(db);
        return all.find((r) => r.id === replay!.id)?.status === 'delivered' ? all : undefined;
      },
      30_000,
      'the replay delivered',
    );
    expect(rows.find((r) => r.id === replay!.id)).toMatchObject({
      attempts: 1,
      last_response_code: 200,
    });
    // The original row is left as it was.
    expect(rows.find((r) => r.id === failed!.id)).toMatchObject({ status: 'failed', attempts: 3 });
    expect(receiver.requests).toHaveLength(4);
    expect(new Set(receiver.requests.map((r) => r.body.toString()))).toEqual(
      new Set([event!.payload]),
    );
  });

  it.concurrent('a receiver that recovers gets the retry: delivered on attempt 2', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations } = await setup(cleanups, { retryMs: 100 });
    let calls = 0;
    const receiver = await startHttpsReceiver({
      handler: () => ({ status: ++calls === 1 ? 503 : 202 }),
    });
    cleanups.push(() => receiver.close());
    await destinations.add({ partnerId: partner.id, environment: 'live', url: receiver.url });
    await emit('vault_pause', {});
    const [row] = await waitFor(
      async () => {
        const rows = await deliveries(db);
        return rows[0]?.status === 'delivered' ? rows : undefined;
      },
      30_000,
      'delivered status',
    );
    expect(row).toMatchObject({ attempts: 2, last_response_code: 202 });
  });

  it.concurrent('only matching, active destinations of the partner environment get an event', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations } = await setup(cleanups);
    const all = await startHttpsReceiver();
    const deposits = await startHttpsReceiver();
    const removed = await startHttpsReceiver();
    const sandbox = await startHttpsReceiver();
    cleanups.push(
      () => all.close(),
      () => deposits.close(),
      () => removed.close(),
      () => sandbox.close(),
    );
    await destinations.add({ partnerId: partner.id, environment: 'live', url: all.url });
    await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: deposits.url,
      eventTypes: ['deposit.confirmed'],
    });
    const gone = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: removed.url,
    });
    await destinations.remove(gone.destination.id);
    await destinations.add({ partnerId: partner.id, environment: 'test', url: sandbox.url });
    await emit('deposit.confirmed', { a: 1 });
    await emit('apy_change', { b: 2 });
    await emit('vault_pause', { c: 3 }, 'test');
    await waitFor(
      async () => {
        const rows = await deliveries(db);
        return rows.length === 4 && rows.every((r) => r.status === 'delivered') ? rows : undefined;
      },
      30_000,
      'four deliveries',
    );
    expect(all.requests.map((r) => r.headers['x-service-event'])).toEqual(
      expect.arrayContaining(['deposit.confirmed', 'apy_change']),
    );
    expect(all.requests).toHaveLength(2);
    expect(deposits.requests.map((r) => r.headers['x-service-event'])).toEqual([
      'deposit.confirmed',
    ]);
    expect(removed.requests).toHaveLength(0);
    expect(sandbox.requests.map((r) => r.headers['x-service-event'])).toEqual(['vault_pause']);
  });

  it.concurrent('after a rotation, deliveries are signed with the new secret', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { partner, emit, destinations } = await setup(cleanups);
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const { destination, secret: old } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    await emit('vault_pause', { n: 1 });
    await waitFor(() => (receiver.requests.length === 1 ? true : undefined), 30_000, 'first');
    const rotated = await destinations.rotate(destination.id);
    await emit('vault_pause', { n: 2 });
    await waitFor(() => (receiver.requests.length === 2 ? true : undefined), 30_000, 'second');
    const [first, second] = receiver.requests;
    expect(verifies(old, first!.body, first!.headers['x-service-signature'])).toBe(true);
    expect(verifies(rotated!.secret, second!.body, second!.headers['x-service-signature'])).toBe(
      true,
    );
    expect(verifies(old, second!.body, second!.headers['x-service-signature'])).toBe(false);
  });

  it.concurrent('deliveries verify with the standardwebhooks library (a client nobody here wrote)', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations } = await setup(cleanups);
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const { destination, secret } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const payload = { slug: 'usdc-core', status: 'paused', note: 'é ✓' };
    const event = await emit('vault_pause', payload);
    await waitFor(() => (receiver.requests.length > 0 ? true : undefined), 30_000, 'a delivery');
    const got = receiver.requests[0]!;
    const headers = got.headers as Record<string, string>;
    expect(new Webhook(secret).verify(got.body.toString('utf8'), headers)).toEqual(payload);
    // The stable event id, twice: the spec-side header and the Standard Webhooks message id.
    expect(headers['x-service-event-id']).toBe(event!.id);
    expect(headers['webhook-id']).toBe(event!.id);
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    // The spec's own header is kept as it was.
    expect(verifies(secret, got.body, headers['x-service-signature'])).toBe(true);
    // Another secret, a changed body, a changed timestamp or id: refused.
    const other = (
      await destinations.add({ partnerId: partner.id, environment: 'test', url: receiver.url })
    ).secret;
    expect(() => new Webhook(other).verify(got.body.toString('utf8'), headers)).toThrow();
    expect(() => new Webhook(secret).verify(`${got.body.toString('utf8')} `, headers)).toThrow();
    expect(() =>
      new Webhook(secret).verify(got.body.toString('utf8'), {
        ...headers,
        'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1),
      }),
    ).toThrow();
    expect(() =>
      new Webhook(secret).verify(got.body.toString('utf8'), { ...headers, 'webhook-id': 'evt_x' }),
    ).toThrow();

    // A replay is the same event: the same id, so a receiver that dedupes by it ignores it.
    await createWebhookDeliveriesRepo(db).replayEvent(event!.id, destination.id);
    await waitFor(() => (receiver.requests.length === 2 ? true : undefined), 30_000, 'the replay');
    const replayed = receiver.requests[1]!.headers as Record<string, string>;
    expect(replayed['webhook-id']).toBe(event!.id);
    expect(
      new Webhook(secret).verify(receiver.requests[1]!.body.toString('utf8'), replayed),
    ).toEqual(payload);
  });

  it.concurrent('a rotation keeps the old secret verifying for its grace period, then not', async ({
    expect,
    onTestFinished,
  }) => {
    const cleanups = cleanupsOf(onTestFinished);
    const { db, partner, emit, destinations } = await setup(cleanups);
    const receiver = await startHttpsReceiver();
    cleanups.push(() => receiver.close());
    const { destination, secret: old } = await destinations.add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    const oldOnly = new Webhook(old);
    const deliver = async (n: number) => {
      await emit('vault_pause', { slug: `s${n}`, status: 'paused' });
      await waitFor(() => (receiver.requests.length === n ? true : undefined), 30_000, `#${n}`);
      const got = receiver.requests[n - 1]!;
      return { body: got.body.toString('utf8'), headers: got.headers as Record<string, string> };
    };

    const rotated = await destinations.rotate(destination.id, { graceMs: 60 * 60_000 });
    expect(rotated!.destination.previousSecret).toEqual({
      fingerprint: destination.secretFingerprint,
      expiresAt: expect.any(Date),
    });
    const during = await deliver(1);
    // Both signatures, the new one first; X-Service-Signature is the new secret's only.
    expect(during.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect(oldOnly.verify(during.body, during.headers)).toEqual({ slug: 's1', status: 'paused' });
    expect(new Webhook(rotated!.secret).verify(during.body, during.headers)).toBeTruthy();
    expect(
      verifies(rotated!.secret, Buffer.from(during.body), during.headers['x-service-signature']),
    ).toBe(true);
    expect(verifies(old, Buffer.from(during.body), during.headers['x-service-signature'])).toBe(
      false,
    );

    // The grace period ends (its end moved to the past: the database clock is the one that counts).
    await db.query(
      `UPDATE webhook_destinations SET previous_secret_expires_at = now() - interval '1 second'
       WHERE id = $1`,
      [destination.id],
    );
    expect((await destinations.find(destination.id))!.previousSecret).toBeNull();
    const after = await deliver(2);
    expect(after.headers['webhook-signature']).toMatch(/^v1,\S+$/);
    expect(() => oldOnly.verify(after.body, after.headers)).toThrow();
    expect(new Webhook(rotated!.secret).verify(after.body, after.headers)).toBeTruthy();

    // A rotation with no grace: the previous secret stops at once.
    const hard = await destinations.rotate(destination.id, { graceMs: 0 });
    expect(hard!.destination.previousSecret).toBeNull();
    const cut = await deliver(3);
    expect(() => new Webhook(rotated!.secret).verify(cut.body, cut.headers)).toThrow();
    expect(new Webhook(hard!.secret).verify(cut.body, cut.headers)).toBeTruthy();
    await expect(destinations.rotate(destination.id, { graceMs: -1 })).rejects.toThrow(RangeError);
  });
});

describe('retry schedule', () => {
  it('attempt 2 after about 60 s, attempt 3 after about 10 min, with ±10 % jitter', () => {
    expect(retryDelay(1, undefined, 0.1, () => 0.5)).toBe(60_000);
    expect(retryDelay(2, undefined, 0.1, () => 0.5)).toBe(600_000);
    expect(retryDelay(1, undefined, 0.1, () => 0)).toBe(54_000);
    expect(retryDelay(1, undefined, 0.1, () => 1)).toBe(66_000);
    expect(retryDelay(2, undefined, 0.1, () => 0)).toBe(540_000);
  });
});
