/**
 * The webhook, keys, team and audit pages keep what they read until it changes
 * (src/portal/change-cache.ts): on PGlite the triggers of migrations 0029 and 0030 drop it at every
 * committed change, on PostgreSQL nothing is kept. On each engine, every change is seen on the very
 * next page load: a member's own (edit, rotate, ping, replay, disable, enable, remove, inbound
 * secret; a key created or revoked; a member invited, removed), the dispatcher's attempts, the
 * indexer's events, the API's inbound events and key uses, the operator's CLI. And the cache itself:
 * one read while nothing changes (PGlite), a read overlapping a change not kept, entries expiring,
 * none on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createDeliveryQueue } from '../../src/db/webhook-delivery-queue.ts';
import { createChangeCache } from '../../src/portal/change-cache.ts';
import { inviteMember } from '../../src/portal/sign-in-links.ts';
import { signPayload } from '../../src/webhooks/signature.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { type Harness, portalHarness, text } from './harness.ts';
import { seedProducts } from './products-fixture.ts';

describe.each(storageEngines())('webhook pages after a change, on %s', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await portalHarness({ engine });
  });
  afterAll(async () => h?.close());

  /** The dispatcher's part: claims what is due, counts it sent and records each outcome. */
  async function dispatch(ok: boolean) {
    const queue = createDeliveryQueue(h.t.db);
    const claimed = await queue.claim(100, 60_000);
    await queue.markSent(claimed);
    await queue.record(
      claimed.map((c) => ({
        id: c.id,
        attempt: c.attempt,
        claim: c.claim,
        ok,
        statusCode: ok ? 200 : 500,
        bodyExcerpt: null,
        error: null,
        retryInMs: 60_000,
        durationMs: 12,
      })),
    );
    return claimed.length;
  }

  it('shows a member’s own changes, the dispatcher’s attempts and new events on the next load', async () => {
    const owner = await h.signedIn(`owner-${engine}@example.com`, 'owner');
    const list = '/portal/live/webhooks';
    await owner.get(list);
    const added = await owner.post(list, { url: 'https://hooks.example.com/first' });
    const id = /\/portal\/live\/webhooks\/(whk_\w+)"/.exec(added.body)![1]!;
    const here = `${list}/${id}`;
    const fingerprint = (body: string) =>
      /Signing secret<\/dt><dd>fingerprint <code>([^<]+)<\/code>/.exec(body)?.[1];
    let page = await owner.get(here);
    expect(text(page.body)).toContain('No deliveries yet');
    expect(text((await owner.get(list)).body)).toContain('No attempts in 24 h');

    // Edit: the new URL, on the destination and in the list.
    await owner.get(`${here}/edit`);
    expect(
      (await owner.post(`${here}/edit`, { url: 'https://hooks.example.com/second' })).status,
    ).toBe(303);
    page = await owner.get(here);
    expect(page.body).toContain('https://hooks.example.com/second');
    expect((await owner.get(list)).body).toContain('https://hooks.example.com/second');

    // Rotate: the new fingerprint, the previous one still signing.
    const before = fingerprint(page.body)!;
    expect(before).toBeTruthy();
    await owner.get(`${here}/rotate`);
    await owner.post(`${here}/rotate`, { grace: '1h' });
    page = await owner.get(here);
    expect(text(page.body)).toContain(`Previous secret ${before} still signs until`);
    expect(fingerprint(page.body)).not.toBe(before);

    // Ping: the test event is in the log, pending; the dispatcher's attempt makes it delivered,
    // with the health figures and the list's badge following.
    expect((await owner.post(`${here}/ping`)).status).toBe(303);
    page = await owner.get(here);
    expect(text(page.body)).toMatch(/ping\s+Pending\s+sending now\s+0/);
    expect(await dispatch(true)).toBe(1);
    page = await owner.get(here);
    expect(text(page.body)).toMatch(/ping\s+Delivered\s+1\s+HTTP 200/);
    expect(text(page.body)).toContain('1 of 1');
    expect(text((await owner.get(list)).body)).toContain('100 % delivered');

    // Replay that delivery: a new row, marked as a replay.
    const delivery = /deliveries\/(dlv_\w+)"/.exec(page.body)![1]!;
    expect((await owner.post(`${here}/deliveries/${delivery}/replay`)).status).toBe(303);
    page = await owner.get(here);
    expect(text(page.body)).toMatch(/ping replay\s+Pending/);
    await dispatch(false);
    page = await owner.get(here);
    expect(text(page.body)).toContain('1 of 2');

    // An event the indexer stores is fanned out to the destination: in its log at once; its page
    // follows the dispatcher too.
    const [product] = await seedProducts(h.t.db, h.partner.id, [
      {
        slug: `pc-${engine}`,
        displayName: 'Cache USDC',
        environment: 'live',
        status: 'active',
        days: 0,
      },
    ]);
    const tx = `0x${'ef'.repeat(32)}` as const;
    const event = (await createEventsRepo(h.t.db).insert({
      partnerId: h.partner.id,
      environment: 'live',
      productId: product!.id,
      eventType: 'deposit.confirmed',
      dedupeKey: `deposit.confirmed:31337:${tx}:0`,
      payload: { product_slug: product!.slug, tx_hash: tx },
      occurredAt: new Date(),
      chain: { chainId: 31337, blockNumber: 7n, blockHash: tx, txHash: tx, logIndex: 0 },
    }))!;
    page = await owner.get(here);
    expect(text(page.body)).toMatch(/deposit\.confirmed\s+Pending/);
    const eventPage = `${list}/events/${event.id}`;
    expect(text((await owner.get(eventPage)).body)).toContain(`${id} pending`);
    await dispatch(true);
    expect(text((await owner.get(eventPage)).body)).toContain(`${id} delivered`);

    // Disable, then enable: each seen at once.
    await owner.get(`${here}/disable`);
    expect((await owner.post(`${here}/disable`, { note: 'maintenance' })).status).toBe(303);
    page = await owner.get(here);
    expect(text(page.body)).toContain('Disabled by your team');
    expect(text((await owner.get(list)).body)).toContain('Disabled by your team');
    expect((await owner.post(`${here}/enable`)).status).toBe(303);
    page = await owner.get(here);
    expect(text(page.body)).not.toContain('Disabled by your team');

    // Remove: its page turns read-only at once ("Removed", no actions; its log is kept), and it
    // is gone from the list.
    await owner.get(`${here}/remove`);
    expect((await owner.post(`${here}/remove`)).status).toBe(303);
    const removed = await owner.get(here);
    expect(removed.status).toBe(200);
    expect(text(removed.body)).toContain('Its delivery log is kept and shown here, read-only.');
    expect(removed.body).not.toContain(`href="${here}/remove"`);
    expect((await owner.get(list)).body).not.toContain(id);
  });

  it('shows the inbound secret set and each inbound event received on the next load', async () => {
    const partner = await createPartnersRepo(h.t.db).create(`Inbound cache ${engine}`);
    const owner = await h.signedIn(`inbound-${engine}@example.com`, 'owner', partner);
    const inbound = '/portal/live/webhooks/inbound';
    expect(text((await owner.get(inbound)).body)).toContain('No live inbound secret yet');
    const created = await owner.post(`${inbound}/secret`);
    const secret = /<code id="new-secret"[^>]*>([^<]+)<\/code>/.exec(created.body)![1]!;
    const page = await owner.get(inbound);
    expect(text(page.body)).toMatch(/Fingerprint sha256:\w+ , created/);
    expect(text(page.body)).toContain('No inbound events yet');

    const apiKey = (await createApiKeysRepo(h.t.db).create(partner.id, 'live', 'inbound')).key;
    const send = async (key: string) => {
      const raw = JSON.stringify({ occurred_at: '2026-03-01T12:00:00Z', data: { n: key } });
      const res = await h.app.inject({
        method: 'POST',
        url: '/api/partner/webhooks/inbound',
        headers: {
          'content-type': 'application/json',
          'x-api-key': apiKey,
          'x-service-event': 'ping',
          'idempotency-key': key,
          'x-service-signature': signPayload(secret, raw),
        },
        payload: raw,
      });
      expect(res.statusCode).toBe(200);
    };
    await send('first');
    expect(text((await owner.get(inbound)).body)).toContain('first');
    await send('second');
    expect(text((await owner.get(inbound)).body)).toContain('second');
    // A duplicate counts on the event it repeats.
    await send('second');
    expect(text((await owner.get(inbound)).body)).toContain('1 duplicate absorbed');
  });
});

describe.each(storageEngines())('keys, team and audit pages after a change, on %s', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await portalHarness({ engine });
  });
  afterAll(async () => h?.close());

  it('shows keys created, used and revoked, members invited and removed, and the audit entries, on the next load', async () => {
    const owner = await h.signedIn(`keys-${engine}@example.com`, 'owner');
    const keys = '/portal/live/keys';
    expect((await owner.get(keys)).status).toBe(200);
    // The log's entries (the filter's list names every action).
    const audit = async () =>
      text((await owner.get('/portal/live/audit')).body.split('<tbody>')[1] ?? '');
    expect(await audit()).not.toContain('Created a key');

    // A key made in the portal, then one by the operator (the CLI's repository call).
    await owner.post(keys, { name: 'Portal key' });
    expect(text((await owner.get(keys)).body)).toContain('Portal key');
    expect(await audit()).toContain('Created a key');
    const cli = await createApiKeysRepo(h.t.db).create(h.partner.id, 'live', 'Operator key');
    let page = text((await owner.get(keys)).body);
    expect(page).toContain('Operator key');
    expect(page).toMatch(/Operator key .*? Never/);

    // A use through the API: its last use shows.
    const used = await h.app.inject({
      url: '/api/partner/products',
      headers: { 'x-api-key': cli.key },
    });
    expect(used.statusCode).toBe(200);
    page = text((await owner.get(keys)).body);
    expect(page).not.toMatch(/Operator key .*? Never/);

    // Revoke it in the portal.
    await owner.get(`${keys}/${cli.record.id}/revoke`);
    expect((await owner.post(`${keys}/${cli.record.id}/revoke`)).status).toBe(303);
    expect(text((await owner.get(keys)).body)).toMatch(/Operator key .*? Revoked/);
    expect(await audit()).toContain('Revoked a key');

    // Team: a member the operator invites, then removed in the portal.
    const team = '/portal/live/team';
    expect(text((await owner.get(team)).body)).not.toContain(`invited-${engine}@example.com`);
    const invited = await inviteMember(h.t.db, {
      partnerId: h.partner.id,
      email: `invited-${engine}@example.com`,
      role: 'viewer',
    });
    expect(text((await owner.get(team)).body)).toContain(`invited-${engine}@example.com`);
    await owner.get(`${team}/${invited.id}/remove`);
    expect((await owner.post(`${team}/${invited.id}/remove`)).status).toBe(303);
    expect(text((await owner.get(team)).body)).not.toContain(`invited-${engine}@example.com`);
    expect(await audit()).toContain('Removed a member');
  });
});

describe.each(storageEngines())('the pages cache on %s', (engine) => {
  let t: TestDatabase;
  let partnerId: string;
  beforeAll(async () => {
    t = await freshDatabase(engine);
    partnerId = (await createPartnersRepo(t.db).create(`Cache ${engine}`)).id;
  });
  afterAll(async () => t?.drop());

  /** A change the pages show: an inbound secret of the partner, written straight to the table. */
  const change = () =>
    t.db.query(
      `INSERT INTO inbound_secrets (partner_id, environment, secret_ciphertext, secret_fingerprint)
       VALUES ($1, 'live', 'c', 'f')
       ON CONFLICT (partner_id, environment) DO UPDATE SET rotated_at = now()`,
      [partnerId],
    );

  it(
    engine === 'pglite'
      ? 'reads once while nothing changes, and again after any committed change'
      : 'reads every time (no process hears of every change in time)',
    async () => {
      const cache = await createChangeCache(t.db, 'webhook_changes');
      let loads = 0;
      const load = async () => ++loads;
      await cache.get('k', load);
      await cache.get('k', load);
      expect(loads).toBe(engine === 'pglite' ? 1 : 2);
      await change();
      expect(await cache.get('k', load)).toBe(loads);
      expect(loads).toBe(engine === 'pglite' ? 2 : 3);
      // A statement that changes no row is no change.
      await t.db.query('UPDATE inbound_secrets SET rotated_at = now() WHERE partner_id = $1', [
        'ptn_none',
      ]);
      await cache.get('k', load);
      expect(loads).toBe(engine === 'pglite' ? 2 : 4);
      // A change inside a transaction counts when it commits, not before.
      await t.db.transaction(async (tx) => {
        await tx.query('UPDATE inbound_secrets SET rotated_at = now() WHERE partner_id = $1', [
          partnerId,
        ]);
      });
      await cache.get('k', load);
      expect(loads).toBe(engine === 'pglite' ? 3 : 5);
      await cache.close();
    },
  );

  it('does not keep a read that overlapped a change', async () => {
    const cache = await createChangeCache(t.db, 'webhook_changes');
    let loads = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slow = cache.get('k', async () => {
      const { rows } = await t.db.query<{ n: string }>('SELECT count(*) AS n FROM inbound_secrets');
      loads++;
      await gate;
      return rows[0]!.n;
    });
    await change();
    release();
    await slow;
    await cache.get('k', async () => {
      loads++;
      return '';
    });
    expect(loads).toBe(2);
    await cache.close();
  });

  it('lets an entry live at most maxAgeMs', async () => {
    let clock = 0;
    const cache = await createChangeCache(t.db, 'webhook_changes', {
      maxAgeMs: 1000,
      now: () => clock,
    });
    let loads = 0;
    const load = async () => ++loads;
    await cache.get('k', load);
    clock = 999;
    await cache.get('k', load);
    expect(loads).toBe(engine === 'pglite' ? 1 : 2);
    clock = 1000;
    await cache.get('k', load);
    expect(loads).toBe(engine === 'pglite' ? 2 : 3);
    await cache.close();
  });
});
