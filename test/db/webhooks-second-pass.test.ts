/**
 * Outbound webhooks, second pass (#15), repositories on every engine: test pings to one
 * destination; retention of the attempt log, finished deliveries and inbound idempotency keys,
 * pruned in batches that skip rows the dispatcher holds.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import {
  createWebhookDeliveriesRepo,
  WebhookReplayError,
} from '../../src/db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createWebhookRetention } from '../../src/db/webhook-retention.ts';
import { outboundPayloadError } from '../../src/webhooks/event-catalogue.ts';
import { createWebhookMaintenance } from '../../src/webhooks/maintenance.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const DAY = 86_400_000;

const box = createSecretBox(randomBytes(32));

describe.each(storageEngines())('webhooks second pass on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });

  async function setup() {
    const t = await freshDatabase(engine);
    opened.push(t);
    const acme = await createPartnersRepo(t.db).create('Acme');
    return {
      db: t.db,
      acme: acme.id,
      destinations: createWebhookDestinationsRepo(t.db, box),
      deliveries: createWebhookDeliveriesRepo(t.db),
    };
  }

  it('queues a ping to one destination only, whatever it subscribes to, never fanned out', async () => {
    const { db, acme, destinations, deliveries } = await setup();
    const add = (eventTypes: string[] | null) =>
      destinations
        .add({ partnerId: acme, environment: 'live', url: 'https://a.example/h', eventTypes })
        .then((r) => r.destination.id);
    const onlyDeposits = await add(['deposit.confirmed']);
    const everything = await add(null);

    const at = new Date('2026-03-01T12:00:00.000Z');
    const ping = await deliveries.enqueuePing(onlyDeposits, at);
    expect(ping.delivery).toMatchObject({
      eventId: ping.eventId,
      eventType: 'ping',
      destinationId: onlyDeposits,
      status: 'pending',
      attempts: 0,
    });
    const [stored] = await createEventsRepo(db).list({ eventType: 'ping' });
    expect(stored?.id).toBe(ping.eventId);
    const payload = JSON.parse(stored?.payload ?? 'null');
    expect(payload).toEqual({ destination_id: onlyDeposits, sent_at: '2026-03-01T12:00:00.000Z' });
    expect(outboundPayloadError('ping', payload)).toBeUndefined();
    // The destination that subscribes to everything got nothing.
    expect(await deliveries.list({ destinationId: everything })).toEqual([]);
    expect(await deliveries.list({ eventId: ping.eventId })).toHaveLength(1);

    // A replay of a ping goes to its destination only.
    const again = await deliveries.replayEvent(ping.eventId);
    expect(again.map((d) => [d.destinationId, d.replayOf])).toEqual([
      [onlyDeposits, ping.delivery.id],
    ]);
    await expect(deliveries.replayEvent(ping.eventId, everything)).rejects.toMatchObject({
      code: 'destination_mismatch',
    });

    await expect(deliveries.enqueuePing('whk_unknown')).rejects.toBeInstanceOf(WebhookReplayError);
    await destinations.remove(everything);
    await expect(deliveries.enqueuePing(everything)).rejects.toMatchObject({
      code: 'destination_removed',
    });
  });

  it('prunes attempts and finished deliveries after 90 days, inbound keys after 30, in batches', async () => {
    const { db, acme, destinations } = await setup();
    const { destination } = await destinations.add({
      partnerId: acme,
      environment: 'live',
      url: 'https://a.example/h',
    });
    const now = new Date();
    const ago = (days: number) => new Date(now.getTime() - days * DAY);
    // Events and deliveries of various ages: finished old ones, finished recent ones, and old
    // pending ones (never deleted). The delivery's age is its last update.
    const delivery = async (n: number, status: string, days: number) => {
      await db.query(
        `INSERT INTO events (id, partner_id, environment, event_type, dedupe_key, payload, occurred_at)
         VALUES ($1, $2, 'live', 'vault_pause', $1, '{}', now())`,
        [`evt_r${n}`, acme],
      );
      const { rows } = await db.query<{ id: string }>(
        `UPDATE webhook_deliveries SET status = $2, attempts = 1, updated_at = $3, last_response_body = 'x'
         WHERE event_id = $1 RETURNING id`,
        [`evt_r${n}`, status, ago(days)],
      );
      const id = rows[0]!.id;
      await db.query(
        `INSERT INTO webhook_delivery_attempts
           (delivery_id, attempt, destination_id, attempted_at, ok, status_code, duration_ms, response_body)
         VALUES ($1, 1, $2, $3, $4, 200, 5, 'x')`,
        [id, destination.id, ago(days), status === 'delivered'],
      );
      return id;
    };
    const oldIds: string[] = [];
    for (let n = 0; n < 5; n++) oldIds.push(await delivery(n, n % 2 ? 'failed' : 'delivered', 91));
    const recent = await delivery(10, 'delivered', 89);
    const oldPending = await delivery(11, 'pending', 120);
    // A recent replay of an old delivery keeps its row; its replay_of becomes null.
    const { rows: replay } = await db.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (event_id, destination_id, replay_of, status)
       VALUES ('evt_r0', $1, $2, 'delivered') RETURNING id`,
      [destination.id, oldIds[0]],
    );

    const inbound = async (key: string, days: number) =>
      db.query(
        `INSERT INTO inbound_events (partner_id, environment, idempotency_key, event_type,
           body_sha256, body, occurred_at, received_at)
         VALUES ($1, 'live', $2, 'ping', '\\x00', '{}', now(), $3)`,
        [acme, key, ago(days)],
      );
    for (let i = 0; i < 3; i++) await inbound(`old-${i}`, 31);
    await inbound('kept', 29);

    const retention = createWebhookRetention(db);
    await expect(retention.pruneInbound(ago(29), 10, now)).rejects.toThrow(/at least 30 days/);

    const run = await createWebhookMaintenance({
      db,
      logger: captureLogger().logger,
      settings: { batch: 2, pauseMs: 1 },
      now: () => now,
    }).runOnce();
    // The attempts older than 90 days (the old pending delivery's too: the log row goes, the
    // delivery stays), then the finished deliveries, then the inbound keys: each in batches of 2.
    expect(run).toEqual({ disabled: [], attempts: 6, deliveries: 5, inbound: 3 });

    const left = await db.query<{ id: string; replay_of: string | null }>(
      'SELECT id, replay_of FROM webhook_deliveries ORDER BY id',
    );
    expect(left.rows.map((r) => r.id).sort()).toEqual([recent, oldPending, replay[0]!.id].sort());
    expect(left.rows.find((r) => r.id === replay[0]!.id)?.replay_of).toBeNull();
    const attempts = await db.query<{ delivery_id: string }>(
      'SELECT delivery_id FROM webhook_delivery_attempts ORDER BY delivery_id',
    );
    expect(attempts.rows.map((r) => r.delivery_id).sort()).toEqual([recent].sort());
    const keys = await db.query<{ idempotency_key: string }>(
      'SELECT idempotency_key FROM inbound_events',
    );
    expect(keys.rows.map((r) => r.idempotency_key)).toEqual(['kept']);
    // Nothing more to do.
    expect(await retention.pruneDeliveries(ago(90))).toBe(0);
  });

  if (engine === 'postgres') {
    it('a prune skips the rows another transaction holds instead of waiting for them', async () => {
      const { db, acme, destinations } = await setup();
      const { destination } = await destinations.add({
        partnerId: acme,
        environment: 'live',
        url: 'https://a.example/h',
      });
      for (const n of [1, 2]) {
        await db.query(
          `INSERT INTO events (id, partner_id, environment, event_type, dedupe_key, payload, occurred_at)
           VALUES ($1, $2, 'live', 'vault_pause', $1, '{}', now())`,
          [`evt_l${n}`, acme],
        );
      }
      await db.query(
        `UPDATE webhook_deliveries SET status = 'failed', updated_at = now() - interval '100 days'
         WHERE destination_id = $1`,
        [destination.id],
      );
      const retention = createWebhookRetention(db);
      // The dispatcher (another connection) holds one of them, as a claim or a record does.
      const pruned = await db.transaction(async (tx) => {
        await tx.query(`SELECT id FROM webhook_deliveries WHERE event_id = 'evt_l1' FOR UPDATE`);
        return retention.pruneDeliveries(new Date(Date.now() - 90 * DAY));
      });
      expect(pruned).toBe(1);
      const { rows } = await db.query<{ event_id: string }>(
        'SELECT event_id FROM webhook_deliveries',
      );
      expect(rows).toEqual([{ event_id: 'evt_l1' }]);
    });
  }
});
