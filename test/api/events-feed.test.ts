/**
 * The events feed (GET /api/partner/events, issue #35) on PGlite and PostgreSQL, against what real
 * webhook destinations received. A local chain (anvil) simulates days of deposits, redeems, an
 * upstream loss and a pause; the real indexer, metrics processor (alerts) and operator pause store
 * the events; the real dispatcher delivers them to an HTTPS receiver. Then:
 *
 * - each key's feed lists exactly the events its destination received: the same ids, the same
 *   payload bytes, the same type and sequence headers; newest first is the same list reversed;
 * - another partner's or the other environment's events never appear, and filters narrow;
 * - paging forward while writers store new events concurrently misses none and repeats none;
 * - the retention window hides events stored before it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import type { Database } from '../../src/db/client.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createIndexer } from '../../src/sync/indexer.ts';
import { applyPauseReasons } from '../../src/sync/lifecycle/status.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { outboundPayload } from '../../src/webhooks/event-catalogue.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import {
  address,
  buildTestApp,
  deployed,
  newProduct,
  partnerWithKey,
} from '../helpers/builders.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { type HttpsReceiver, startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';
import { type LocalHistory, provisionEngines, startHistory } from '../sync/metrics-helpers.ts';

const DAYS = 12;
const SLUGS = [
  'acme-live-usdc-core',
  'acme-live-usdc-flex',
  'acme-live-usdc-boost',
  'acme-test-usdc-core',
  'bravo-live-usdc-core',
];
const box = createSecretBox(randomBytes(32));

interface FeedEvent {
  id: string;
  type: string;
  product_slug: string | null;
  sequence: number | null;
  partner_sequence: number;
  occurred_at: string;
  created_at: string;
  payload: Record<string, unknown>;
}
interface Page {
  events: FeedEvent[];
  has_more: boolean;
  next_cursor: string | null;
  forward_cursor: string | null;
}
type App = Awaited<ReturnType<typeof buildTestApp>>;

async function page(app: App, key: string, query: Record<string, string>): Promise<Page> {
  const res = await app.inject({
    method: 'GET',
    url: '/api/partner/events',
    query,
    headers: { 'x-api-key': key },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as Page;
}

/** Every event, paging in `order` with `limit`, following next_cursor to the end. */
async function all(
  app: App,
  key: string,
  order: 'oldest_first' | 'newest_first',
  extra: Record<string, string> = {},
  limit = 7,
): Promise<FeedEvent[]> {
  const out: FeedEvent[] = [];
  let p = await page(app, key, { order, limit: String(limit), ...extra });
  for (;;) {
    out.push(...p.events);
    if (!p.has_more) return out;
    p = await page(app, key, { cursor: p.next_cursor!, limit: String(limit), ...extra });
  }
}

let history: LocalHistory;
beforeAll(async () => {
  history = await startHistory('events-feed', DAYS);
}, 120_000);
afterAll(async () => {
  await history?.anvil.stop();
});

describe.each(storageEngines())('the events feed on %s', (engine) => {
  let t: TestDatabase;
  let db: Database;
  let app: App;
  let receiver: HttpsReceiver;
  let products: Product[];
  const keys = {} as Record<'acmeLive' | 'acmeTest' | 'bravoLive', string>;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    t = await freshDatabase(engine);
    db = t.db;
    products = await provisionEngines(
      db,
      history.deployment,
      SLUGS.map((s) => history.deployment.engines[s]!),
    );
    const bySlug = (s: string) => products.find((p) => p.slug === s)!;
    const acme = bySlug('acme-live-usdc-core').partnerId;
    const bravo = bySlug('bravo-live-usdc-core').partnerId;
    const keyRepo = createApiKeysRepo(db);
    keys.acmeLive = (await keyRepo.create(acme, 'live')).key;
    keys.acmeTest = (await keyRepo.create(acme, 'test')).key;
    keys.bravoLive = (await keyRepo.create(bravo, 'live')).key;

    receiver = await startHttpsReceiver();
    stops.push(() => receiver.close());
    const destinations = createWebhookDestinationsRepo(db, box);
    await destinations.add({
      partnerId: acme,
      environment: 'live',
      url: `${receiver.url}/acme-live`,
    });
    await destinations.add({
      partnerId: acme,
      environment: 'test',
      url: `${receiver.url}/acme-test`,
    });
    await destinations.add({
      partnerId: bravo,
      environment: 'live',
      url: `${receiver.url}/bravo-live`,
    });

    // The history's events, stored by the real emitters.
    const logger = captureLogger().logger;
    const indexer = createIndexer({
      db,
      logger,
      chain: history.chain,
      client: createChainClient(history.chain),
      holder: 'events-feed-test',
    });
    for (let i = 0; i < 50; i++) {
      const round = await indexer.runOnce();
      if (round.toBlock === null) break;
    }
    await createMetricsProcessor({
      db,
      logger,
      chain: history.chain,
      client: createChainClient(history.chain),
      now: () => new Date((history.deployment.historyEndTimestamp + 3600) * 1000),
      alertWindowDays: 10_000,
    }).runOnce();
    for (const slug of ['acme-live-usdc-core', 'bravo-live-usdc-core', 'acme-test-usdc-core']) {
      const p = (await createProductsRepo(db).getBySlug(slug))!;
      await applyPauseReasons(db, p, { operatorPaused: true }, new Date());
    }

    const sender = createSender({
      policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
      extraCa: testCaPem(),
    });
    stops.push(() => sender.close());
    const job = createDispatcher({ db, logger, sender, secretBox: box, pollMs: 20 }).job();
    job.start();
    stops.push(() => job.stop());
    await waitFor(
      async () => {
        const { rows } = await db.query<{ pending: string; total: string }>(
          `SELECT count(*) FILTER (WHERE status <> 'delivered') AS pending, count(*) AS total
           FROM webhook_deliveries`,
        );
        return Number(rows[0]!.total) > 0 && rows[0]!.pending === '0' ? true : undefined;
      },
      120_000,
      'every delivery delivered',
    );

    const retried = await db.query<{ attempts: number; last_error: string | null }>(
      'SELECT attempts, last_error FROM webhook_deliveries WHERE attempts > 1',
    );
    if (retried.rows.length > 0) console.log(`deliveries sent again (${engine}):`, retried.rows);

    app = await buildTestApp({ db });
    await app.ready();
  }, 300_000);
  afterAll(async () => {
    await app?.close();
    for (const s of stops.reverse()) await s();
    await t?.drop();
  });

  /**
   * What the receiver got at `path`, by event id. Delivery is at least once (an attempt whose
   * answer came after its 10 s limit on a loaded machine is sent again): a repeat must carry the
   * same body and headers, and receivers dedupe on the id.
   */
  function received(path: string) {
    const got = receiver.requests.filter((r) => r.url === path);
    const byId = new Map<string, (typeof got)[number]>();
    for (const r of got) {
      const id = String(r.headers['webhook-id']);
      const first = byId.get(id);
      if (first) {
        expect(r.body.equals(first.body)).toBe(true);
        expect(r.headers['x-service-sequence']).toBe(first.headers['x-service-sequence']);
      } else byId.set(id, r);
    }
    return byId;
  }

  it.each([
    ['acmeLive', '/acme-live'],
    ['acmeTest', '/acme-test'],
    ['bravoLive', '/bravo-live'],
  ] as const)(
    'lists exactly what the %s destination received: ids, payload bytes, headers',
    async (who, path) => {
      const got = received(path);
      const listed = await all(app, keys[who], 'oldest_first');
      expect(listed.map((e) => e.id).sort()).toEqual([...got.keys()].sort());
      for (const e of listed) {
        const r = got.get(e.id)!;
        // The stored payload text, spliced in unchanged: the very bytes the delivery carried.
        expect(JSON.stringify(e.payload)).toBe(r.body.toString('utf8'));
        expect(e.type).toBe(r.headers['x-service-event']);
        expect(String(e.sequence)).toBe(r.headers['x-service-sequence']);
        expect(String(e.partner_sequence)).toBe(r.headers['x-service-partner-sequence']);
        expect(e.product_slug).toBe(e.payload.slug);
      }
      const seqs = listed.map((e) => e.partner_sequence);
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
      // Per product, the sequence increases in the order the events were stored.
      const last = new Map<string, number>();
      for (const e of listed) {
        expect(e.sequence!).toBeGreaterThan(last.get(e.product_slug!) ?? 0);
        last.set(e.product_slug!, e.sequence!);
      }
      // Newest first is the same list reversed, through another page size.
      const newest = await all(app, keys[who], 'newest_first', {}, 5);
      expect(newest.map((e) => e.id)).toEqual(listed.map((e) => e.id).reverse());
    },
  );

  it('covers deposits, redeems, alerts and the pause', async () => {
    const types = new Set((await all(app, keys.acmeLive, 'oldest_first')).map((e) => e.type));
    expect(types).toContain('deposit.confirmed');
    expect(types).toContain('redeem.confirmed');
    expect(types).toContain('vault_pause');
    expect(types.has('apy_change') || types.has('tvl_alert')).toBe(true);
  });

  it("never lists another partner's or the other environment's events", async () => {
    const sets = await Promise.all(
      (['acmeLive', 'acmeTest', 'bravoLive'] as const).map(
        async (k) => new Set((await all(app, keys[k], 'oldest_first', {}, 100)).map((e) => e.id)),
      ),
    );
    const [a, b, c] = sets as [Set<string>, Set<string>, Set<string>];
    for (const id of a) expect(b.has(id) || c.has(id)).toBe(false);
    for (const id of b) expect(c.has(id)).toBe(false);
    // Together they are every stored event but the test ones.
    const { rows } = await db.query<{ id: string }>(
      "SELECT id FROM events WHERE event_type <> 'ping'",
    );
    expect(a.size + b.size + c.size).toBe(rows.length);
    // A product filter naming another partner's product is refused as the product routes do.
    const other = await app.inject({
      method: 'GET',
      url: '/api/partner/events?product=bravo-live-usdc-core',
      headers: { 'x-api-key': keys.acmeLive },
    });
    expect(other.statusCode).toBe(403);
    expect(other.json()).toMatchObject({ success: false, code: 'not_owned' });
    const otherEnv = await app.inject({
      method: 'GET',
      url: '/api/partner/events?product=acme-test-usdc-core',
      headers: { 'x-api-key': keys.acmeLive },
    });
    expect(otherEnv.statusCode).toBe(404);
    expect(otherEnv.json()).toMatchObject({ success: false, code: 'not_found' });
  });

  it('filters by type, product and time', async () => {
    const everything = await all(app, keys.acmeLive, 'oldest_first', {}, 100);
    const pauses = await all(app, keys.acmeLive, 'oldest_first', { type: 'vault_pause' });
    expect(pauses.map((e) => e.id)).toEqual(
      everything.filter((e) => e.type === 'vault_pause').map((e) => e.id),
    );
    const two = await all(app, keys.acmeLive, 'newest_first', {
      type: 'deposit.confirmed,redeem.confirmed',
    });
    expect(new Set(two.map((e) => e.type))).toEqual(
      new Set(['deposit.confirmed', 'redeem.confirmed']),
    );
    const flex = await all(app, keys.acmeLive, 'oldest_first', {
      product: 'acme-live-usdc-flex',
    });
    expect(flex.length).toBeGreaterThan(0);
    expect(flex.map((e) => e.id)).toEqual(
      everything.filter((e) => e.product_slug === 'acme-live-usdc-flex').map((e) => e.id),
    );
    const mid = everything[Math.floor(everything.length / 2)]!.occurred_at;
    const since = await all(app, keys.acmeLive, 'oldest_first', { occurred_since: mid });
    expect(since.map((e) => e.id)).toEqual(
      everything.filter((e) => e.occurred_at >= mid).map((e) => e.id),
    );
    const before = await all(app, keys.acmeLive, 'oldest_first', { occurred_before: mid });
    expect(before.length + since.length).toBe(everything.length);
    // DECISIONS names the time filters `since` and `until`: the same filters (they were ignored,
    // answering the unfiltered feed).
    const sinceAlias = await all(app, keys.acmeLive, 'oldest_first', { since: mid });
    expect(sinceAlias.map((e) => e.id)).toEqual(since.map((e) => e.id));
    const untilAlias = await all(app, keys.acmeLive, 'oldest_first', { until: mid });
    expect(untilAlias.map((e) => e.id)).toEqual(before.map((e) => e.id));
  });

  it('answers bad parameters with catalogue codes, never a 500', async () => {
    const bad: Array<[Record<string, string>, string]> = [
      [{ cursor: 'nope!' }, 'invalid_cursor'],
      [{ cursor: Buffer.from('e1.x.5').toString('base64url') }, 'invalid_cursor'],
      [
        { cursor: Buffer.from('e1.a.5').toString('base64url'), order: 'newest_first' },
        'invalid_cursor',
      ],
      [{ order: 'sideways' }, 'invalid_order'],
      [{ limit: '0' }, 'invalid_limit'],
      [{ limit: '101' }, 'invalid_limit'],
      [{ limit: 'ten' }, 'invalid_limit'],
      [{ type: 'ping' }, 'unknown_event'],
      [{ type: 'deposit.confirmed,nope' }, 'unknown_event'],
      [{ occurred_since: '2026-01-01' }, 'invalid_time'],
      [
        { occurred_since: '2026-02-01T00:00:00Z', occurred_before: '2026-01-01T00:00:00Z' },
        'invalid_time',
      ],
      [{ product: 'no-such-product' }, 'not_found'],
    ];
    for (const [query, code] of bad) {
      const res = await app.inject({
        method: 'GET',
        url: '/api/partner/events',
        query,
        headers: { 'x-api-key': keys.acmeLive },
      });
      expect(res.json(), JSON.stringify(query)).toMatchObject({ success: false, code });
      expect(res.statusCode).toBeLessThan(500);
    }
    // Found by a QA sweep: positions past PostgreSQL's bigint and year 0000 were 500s, a
    // parameter sent twice answered the inbound body's invalid_payload, and 02-30 was read as
    // 03-02.
    const cursorAt = (position: string) => Buffer.from(`e1.a.${position}`).toString('base64url');
    const raw: Array<[string, string, RegExp?]> = [
      [`cursor=${cursorAt('9999999999999999999')}`, 'invalid_cursor'],
      [`cursor=${cursorAt('9223372036854775808')}`, 'invalid_cursor'],
      ['occurred_since=0000-01-01T00:00:00Z', 'invalid_time'],
      ['occurred_before=2026-02-30T00:00:00Z', 'invalid_time'],
      ['occurred_since=2026-01-01T24:00:00Z', 'invalid_time'],
      ['limit=5&limit=6', 'invalid_limit', /limit was given more than once/],
      ['limit=5&limit=5', 'invalid_limit'],
      ['order=oldest_first&order=newest_first', 'invalid_order'],
      [`cursor=${cursorAt('1')}&cursor=${cursorAt('1')}`, 'invalid_cursor'],
      ['type=vault_pause&type=tvl_alert', 'unknown_event', /send it once/],
      ['occurred_since=2026-01-01T00:00:00Z&occurred_since=2026-01-02T00:00:00Z', 'invalid_time'],
      ['product=a&product=b', 'malformed_request'],
      [
        'since=2026-01-01T00:00:00Z&occurred_since=2026-01-01T00:00:00Z',
        'invalid_time',
        /not both/,
      ],
      ['until=2026-02-30T00:00:00Z', 'invalid_time'],
    ];
    for (const [query, code, message] of raw) {
      const res = await app.inject({
        method: 'GET',
        url: `/api/partner/events?${query}`,
        headers: { 'x-api-key': keys.acmeLive },
      });
      expect(res.json(), query).toMatchObject({ success: false, code });
      if (message) expect(res.json().message).toMatch(message);
    }
    // The largest position PostgreSQL holds is a cursor like any other (an empty page).
    const last = await app.inject({
      method: 'GET',
      url: `/api/partner/events?cursor=${cursorAt('9223372036854775807')}`,
      headers: { 'x-api-key': keys.acmeLive },
    });
    expect(last.statusCode).toBe(200);
    // Years 0001-0099 are real years (Date.UTC read them as 19xx).
    const early = await app.inject({
      method: 'GET',
      url: '/api/partner/events?occurred_before=0050-06-01T00:00:00Z',
      headers: { 'x-api-key': keys.acmeLive },
    });
    expect(early.statusCode).toBe(200);
    expect(early.json().data.events).toEqual([]);
  });

  it('pages forward while new events arrive: misses none, repeats none', async () => {
    const { partner, key } = await partnerWithKey(db, `Carol-${engine}`);
    const product = await createProductsRepo(db).create(
      newProduct({
        partnerId: partner.id,
        slug: `carol-${engine}`,
        deployed: deployed(address(0xca401), { shareDecimals: 12, at: new Date() }),
      }),
    );
    const stored: string[] = [];
    let writing = true;
    const writer = async (w: number) => {
      for (let i = 0; i < 25; i++) {
        const id = await db.transaction(async (tx) => {
          const e = await createEventsRepo(tx).insert({
            partnerId: partner.id,
            environment: 'live',
            productId: product.id,
            eventType: 'vault_pause',
            dedupeKey: `carol:${engine}:${w}:${i}`,
            payload: outboundPayload('vault_pause', { slug: product.slug, status: 'paused' }),
            occurredAt: new Date(),
          });
          // Hold the transaction open a little, so readers run while it is uncommitted.
          await new Promise((r) => setTimeout(r, Math.random() * 8));
          return e!.id;
        });
        stored.push(id);
      }
    };
    const writers = Promise.all([0, 1, 2, 3].map(writer)).finally(() => {
      writing = false;
    });
    const seen: string[] = [];
    let p = await page(app, key, { order: 'oldest_first', limit: '5' });
    let doneAt: number | undefined;
    for (;;) {
      seen.push(...p.events.map((e) => e.id));
      if (!writing) doneAt ??= Date.now();
      // Pages may lag the newest event by the route's freshness (1 s): stop only at an empty page
      // asked for more than that after the writers finished.
      if (
        doneAt !== undefined &&
        Date.now() - doneAt > 1_100 &&
        !p.has_more &&
        p.events.length === 0
      )
        break;
      if (p.events.length === 0) await new Promise((r) => setTimeout(r, 50));
      const cursor = p.next_cursor!;
      p = await page(app, key, { cursor, limit: '5' });
    }
    await writers;
    // One more page after the writers finished: nothing left behind the cursor.
    expect(stored).toHaveLength(100);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...stored].sort());
  });

  it('lists only what was stored within the retention window', async () => {
    const later = await buildTestApp({
      db,
      eventsRetentionDays: 1,
      now: () => new Date(Date.now() + 2 * 86_400_000),
    });
    try {
      await later.ready();
      const p = await page(later, keys.acmeLive, {});
      expect(p.events).toEqual([]);
      expect(p.has_more).toBe(false);
      expect(p.forward_cursor).not.toBeNull();
    } finally {
      await later.close();
    }
  });
});
