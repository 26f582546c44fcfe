/**
 * Ordering (issue #35): retries deliver events out of order, and a receiver puts them back in order
 * by `X-Service-Sequence`. A real HTTPS receiver fails the first attempt of `redeem.requested`, so
 * the `redeem.confirmed` stored after it arrives first; the retry brings the request later. On
 * PGlite and PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createEventsRepo } from '../../src/db/events.ts';
import { createProductsRepo } from '../../src/db/products.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { OUTBOUND_EVENTS, outboundPayload } from '../../src/webhooks/event-catalogue.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import { address, deployed, newProduct, partnerWithKey } from '../helpers/builders.ts';
import { freshDatabase, storageEngines } from '../helpers/db.ts';
import { startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';

const box = createSecretBox(randomBytes(32));

/**
 * A receiver as a partner would write it: it applies a product's events in sequence order and
 * keeps the highest number applied; an event numbered below that arrived late and is placed where
 * it belongs, not applied on top.
 */
function orderingReceiver() {
  const applied = new Map<string, Array<{ seq: bigint; type: string; id: string }>>();
  return {
    accept(slug: string, seq: bigint, type: string, id: string) {
      const list = applied.get(slug) ?? [];
      if (list.some((e) => e.id === id)) return; // a repeat of an event already held
      list.push({ seq, type, id });
      list.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
      applied.set(slug, list);
    },
    ordered: (slug: string) => applied.get(slug) ?? [],
  };
}

describe.each(storageEngines())('event order on %s', (engine) => {
  it('a retried event arrives after a later one; the receiver orders them by sequence', async () => {
    const t = await freshDatabase(engine);
    const cleanups: Array<() => Promise<void>> = [() => t.drop()];
    try {
      const db = t.db;
      const { partner } = await partnerWithKey(db, 'Acme');
      const product = await createProductsRepo(db).create(
        newProduct({
          partnerId: partner.id,
          slug: 'acme-flex',
          vaultKind: 'async',
          deployed: deployed(address(0xf1e), { shareDecimals: 12, at: new Date() }),
        }),
      );
      let failedOnce = false;
      const receiver = await startHttpsReceiver({
        handler: ({ headers }) => {
          if (headers['x-service-event'] === 'redeem.requested' && !failedOnce) {
            failedOnce = true;
            return { status: 503, body: 'busy' };
          }
          return { status: 200, body: 'ok' };
        },
      });
      cleanups.push(() => receiver.close());
      await createWebhookDestinationsRepo(db, box).add({
        partnerId: partner.id,
        environment: 'live',
        url: receiver.url,
      });

      // Stored in the order they happened: deposit, redeem request, redeem settlement.
      const events = createEventsRepo(db);
      const stored: string[] = [];
      for (const type of ['deposit.confirmed', 'redeem.requested', 'redeem.confirmed'] as const) {
        const example = OUTBOUND_EVENTS[type].example as Record<string, unknown>;
        const e = await events.insert({
          partnerId: partner.id,
          environment: 'live',
          productId: product.id,
          eventType: type,
          dedupeKey: `${type}:ordering`,
          payload: outboundPayload(type, { ...example, slug: product.slug } as never),
          occurredAt: new Date(),
        });
        stored.push(e!.id);
        expect(e!.productSeq).toBe(BigInt(stored.length));
      }

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
        retryDelaysMs: [400, 400],
        jitter: 0,
        pollMs: 20,
      }).job();
      job.start();
      cleanups.push(() => job.stop());
      await waitFor(
        () => (receiver.requests.length >= 4 ? true : undefined),
        30_000,
        'three deliveries and one retry',
      );

      const arrivals = receiver.requests.map((r) => ({
        id: String(r.headers['webhook-id']),
        type: String(r.headers['x-service-event']),
        seq: BigInt(String(r.headers['x-service-sequence'])),
      }));
      // The failed attempt and its retry carry the same id and the same number.
      const requested = arrivals.filter((a) => a.type === 'redeem.requested');
      expect(requested).toHaveLength(2);
      expect(requested[0]).toEqual(requested[1]);
      // Delivered out of order: the settlement reached the receiver before the request it settles.
      const delivered = arrivals.slice();
      delivered.splice(delivered.indexOf(requested[0]!), 1); // the failed attempt
      expect(delivered.map((a) => a.type)).not.toEqual([
        'deposit.confirmed',
        'redeem.requested',
        'redeem.confirmed',
      ]);
      expect(delivered.at(-1)?.type).toBe('redeem.requested');

      // The receiver puts them back in the order they happened.
      const r = orderingReceiver();
      for (const a of delivered) r.accept(product.slug, a.seq, a.type, a.id);
      expect(r.ordered(product.slug).map((e) => e.id)).toEqual(stored);
      expect(r.ordered(product.slug).map((e) => e.type)).toEqual([
        'deposit.confirmed',
        'redeem.requested',
        'redeem.confirmed',
      ]);
    } finally {
      for (const c of cleanups.reverse()) await c();
    }
  }, 60_000);
});
