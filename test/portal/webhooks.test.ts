/**
 * Webhook pages over HTTP (inject): every action checked against the role and the environment,
 * HTTPS-only destinations refused in words, unknown event types refused, another partner's
 * destination never reachable, and each change audited. Deliveries themselves are exercised in
 * webhooks-browser.test.ts against the real dispatcher.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { signPayload } from '../../src/webhooks/signature.ts';
import { type Client, type Harness, portalHarness, text } from './harness.ts';
import { seedProducts } from './products-fixture.ts';

let h: Harness;
let n = 0;
const email = (tag: string) => `${tag}-${++n}@example.com`;

beforeAll(async () => {
  // Many members sign in here: more than the default sign-in limit per client address.
  h = await portalHarness({ signInLimit: { max: 1000, windowMs: 60_000 } });
});
afterAll(async () => h?.close());

async function addDestination(
  c: Client,
  env: 'live' | 'test',
  url = 'https://hooks.example.com/x',
) {
  await c.get(`/portal/${env}/webhooks`);
  const res = await c.post(`/portal/${env}/webhooks`, { url });
  expect(res.status, text(res.body).slice(0, 300)).toBe(200);
  const id = new RegExp(`/portal/${env}/webhooks/(whk_\\w+)"`).exec(res.body)?.[1];
  expect(id).toBeTruthy();
  return { id: id!, body: res.body };
}

describe('webhook pages', () => {
  it('adds an HTTPS destination with chosen event types, shows its secret once, and refuses http:// in words', async () => {
    const c = await h.signedIn(email('add'), 'admin');
    const page = await c.get('/portal/live/webhooks');
    // The catalogue's descriptions show their `names` as code, not as literal backticks.
    const hints = [...page.body.matchAll(/<p class="hint" id="type-[^"]*-desc">(.*?)<\/p>/gs)];
    expect(hints.length).toBeGreaterThan(3);
    for (const [, hint] of hints) expect(hint).not.toContain('`');
    expect(page.body).toContain('<code>Deposit</code>');
    const bad = await c.post('/portal/live/webhooks', { url: 'http://hooks.example.com/x' });
    expect(bad.status).toBe(400);
    expect(text(bad.body)).toContain('webhook destinations must be https:// URLs (got http)');
    // Said once, not repeated.
    expect(text(bad.body)).not.toContain('Destinations must be https:// URLs.');
    const unknown = await c.post('/portal/live/webhooks', {
      url: 'https://hooks.example.com/x',
      event_types: 'no.such',
    });
    expect(text(unknown.body)).toContain('There is no event type no.such');
    const form = new URLSearchParams({ _csrf: c.csrf, url: 'https://hooks.example.com/typed' });
    form.append('event_types', 'deposit.confirmed');
    form.append('event_types', 'vault_pause');
    const cookie = [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await h.app.inject({
      method: 'POST',
      url: '/portal/live/webhooks',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: form.toString(),
    });
    expect(res.statusCode).toBe(200);
    const secret = /<code id="new-secret"[^>]*>([^<]+)<\/code>/.exec(res.body)?.[1];
    expect(secret).toMatch(/^whsec_/);
    expect(text(res.body)).toContain('deposit.confirmed, vault_pause');
    const again = await c.get('/portal/live/webhooks');
    expect(again.body).not.toContain(secret!);
  });

  it('refuses a destination at a private, loopback or link-local address in words, the form kept', async () => {
    const partner = await createPartnersRepo(h.t.db).create(`Literal ${n}`);
    const c = await h.signedIn(email('literal'), 'admin', partner);
    await c.get('/portal/live/webhooks');
    for (const [url, said] of [
      ['https://10.0.0.5/hook', '10.0.0.5 is a private address'],
      ['https://127.0.0.1:8443/hook', '127.0.0.1 is a loopback address'],
      ['https://[::1]/hook', '[::1] is a loopback address'],
      ['https://169.254.169.254/latest', '169.254.169.254 is a link-local address'],
      ['https://[fd00::1]/hook', '[fd00::1] is a unique-local (private) address'],
      ['https://[::ffff:192.168.1.1]/hook', '[::ffff:c0a8:101] (192.168.1.1) is a private address'],
    ] as const) {
      const res = await c.post('/portal/live/webhooks', { url, event_types: 'vault_pause' });
      expect(res.status, url).toBe(400);
      const summary = /<div class="error-summary" role="alert"[^>]*>(.*?)<\/div>/s.exec(res.body);
      expect(text(summary?.[1] ?? ''), url).toBe(
        `There is a problem That URL does not work: ${said}; webhooks are sent only to public addresses: use a public host name or address.`,
      );
      // The fields as typed, the URL marked, to correct them.
      expect(res.body, url).toMatch(
        new RegExp(
          `<input type="url" id="dest-url" name="url"[^>]*value="${url.replace(/[.[\]]/g, '\\$&')}" aria-invalid="true">`,
        ),
      );
      expect(res.body, url).toMatch(/value="vault_pause" checked/);
      expect(res.body, url).not.toMatch(/value="tvl_alert" checked/);
      expect(res.body, url).not.toContain('new-secret');
    }
    // Nothing was added; a host name is judged when sending, not now (even one naming loopback).
    expect(text((await c.get('/portal/live/webhooks')).body)).toContain('No live destinations yet');
    const named = await addDestination(c, 'live', 'https://localhost:8443/hook');
    expect(text(named.body)).toContain('Signing secret of https://localhost:8443/hook');
  });

  it('checks the role and the environment on every action', async () => {
    const owner = await h.signedIn(email('owner'), 'owner');
    const live = await addDestination(owner, 'live');
    const test = await addDestination(owner, 'test');
    const actions = (env: string, id: string): Array<[string, Record<string, string>]> => [
      [`/portal/${env}/webhooks`, { url: 'https://hooks.example.com/y' }],
      [`/portal/${env}/webhooks/${id}/ping`, {}],
      [`/portal/${env}/webhooks/${id}/rotate`, { grace: '1h' }],
      [`/portal/${env}/webhooks/${id}/replay-failed`, { since: '2026-01-01T00:00' }],
      [`/portal/${env}/webhooks/${id}/enable`, {}],
      [`/portal/${env}/webhooks/${id}/remove`, {}],
      [`/portal/${env}/webhooks/inbound/secret`, {}],
      [`/portal/${env}/webhooks/inbound/secret`, { grace: '24h' }],
    ];
    const viewer = await h.signedIn(email('viewer'), 'viewer');
    const developer = await h.signedIn(email('dev'), 'developer');
    for (const [url, fields] of [...actions('live', live.id), ...actions('test', test.id)]) {
      await viewer.get('/portal/live/webhooks');
      expect((await viewer.post(url, fields)).status, `viewer ${url}`).toBe(403);
    }
    for (const [url, fields] of actions('live', live.id)) {
      await developer.get('/portal/live/webhooks');
      const res = await developer.post(url, fields);
      expect(res.status, `developer ${url}`).toBe(403);
      expect(text(res.body)).toContain('As developer you cannot change live webhooks.');
    }
    // A developer manages test webhooks.
    await developer.get(`/portal/test/webhooks/${test.id}`);
    expect((await developer.post(`/portal/test/webhooks/${test.id}/ping`, {})).status).toBe(303);
    await developer.get(`/portal/test/webhooks/${test.id}/rotate`);
    const rotated = await developer.post(`/portal/test/webhooks/${test.id}/rotate`, {
      grace: '1h',
    });
    expect(text(rotated.body)).toMatch(/keeps signing until/);
    // Everyone sees both environments' pages.
    for (const url of [`/portal/live/webhooks/${live.id}`, '/portal/live/webhooks/inbound']) {
      expect((await viewer.get(url)).status, url).toBe(200);
    }
  });

  it('never reaches another partner’s destination, nor one of the other environment', async () => {
    const owner = await h.signedIn(email('scope'), 'owner');
    const { id } = await addDestination(owner, 'live');
    const other = await createPartnersRepo(h.t.db).create('Other Co');
    const stranger = await h.signedIn(email('stranger'), 'owner', other);
    for (const url of [`/portal/live/webhooks/${id}`, `/portal/live/webhooks/${id}/rotate`]) {
      expect((await stranger.get(url)).status, url).toBe(404);
    }
    await stranger.get('/portal/live/webhooks');
    expect((await stranger.post(`/portal/live/webhooks/${id}/remove`)).status).toBe(404);
    expect((await owner.get(`/portal/test/webhooks/${id}`)).status).toBe(404);
  });

  it('pages the delivery log by 50, newest first, with status, type and time filtered by the database', async () => {
    const partner = await createPartnersRepo(h.t.db).create(`Log ${n}`);
    const owner = await h.signedIn(email('log'), 'owner', partner);
    const { id } = await addDestination(owner, 'live');
    const [product] = await seedProducts(h.t.db, partner.id, [
      { slug: `log-${n}`, displayName: 'Log USDC', environment: 'live', status: 'active', days: 0 },
    ]);
    // 56 deposits and 4 redemptions, each fanned out to the destination as a pending delivery.
    const events = createEventsRepo(h.t.db);
    for (let i = 0; i < 60; i++) {
      const tx = `0x${(i + 1).toString(16).padStart(64, '0')}` as const;
      const type = i % 15 === 14 ? 'redeem.confirmed' : 'deposit.confirmed';
      await events.insert({
        partnerId: partner.id,
        environment: 'live',
        productId: product!.id,
        eventType: type,
        dedupeKey: `${type}:31337:${tx}:0`,
        payload: { product_slug: product!.slug, tx_hash: tx },
        occurredAt: new Date(),
        chain: { chainId: 31337, blockNumber: BigInt(i), blockHash: tx, txHash: tx, logIndex: 0 },
      });
    }
    // The 20 oldest were created a day earlier, for the time filter.
    await h.t.db.query(
      `UPDATE webhook_deliveries SET created_at = created_at - interval '1 day'
       WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
                    WHERE d.destination_id = $1 ORDER BY e.seq LIMIT 20)`,
      [id],
    );
    const detailLinks = (body: string) =>
      [...body.matchAll(/deliveries\/(dlv_[1-9A-HJ-NP-Za-km-z]{22})"/g)].map((m) => m[1]!);
    const { rows: all } = await h.t.db.query<{ id: string }>(
      `SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
       WHERE d.destination_id = $1 ORDER BY d.created_at DESC, e.seq DESC, d.id DESC`,
      [id],
    );
    expect(all).toHaveLength(60);

    const first = await owner.get(`/portal/live/webhooks/${id}`);
    expect(detailLinks(first.body)).toEqual(all.slice(0, 50).map((r) => r.id));
    expect(text(first.body)).not.toContain('Newest deliveries');
    const older = /<a class="older" href="([^"]+)">Older deliveries<\/a>/.exec(first.body)?.[1];
    expect(older).toBe(`/portal/live/webhooks/${id}?before=${all[49]!.id}`);
    const second = await owner.get(older!.replaceAll('&amp;', '&'));
    expect(detailLinks(second.body)).toEqual(all.slice(50).map((r) => r.id));
    expect(text(second.body)).toContain('Newest deliveries');
    expect(second.body).not.toContain('Older deliveries');

    // Filters, alone and together, answered by the database rather than cut from a fixed read.
    const byType = await owner.get(`/portal/live/webhooks/${id}?type=redeem.confirmed`);
    expect(detailLinks(byType.body)).toHaveLength(4);
    const recent = await owner.get(
      `/portal/live/webhooks/${id}?since=${new Date(Date.now() - 3_600_000).toISOString().slice(0, 16)}`,
    );
    expect(detailLinks(recent.body)).toEqual(all.slice(0, 40).map((r) => r.id));
    const none = await owner.get(
      `/portal/live/webhooks/${id}?status=delivered&type=redeem.confirmed`,
    );
    expect(text(none.body)).toContain('No deliveries match these filters');
    // A page link keeps the filters; a cursor that names no delivery shows none, never an error.
    const sinceSeconds = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 19);
    const withSeconds = await owner.get(`/portal/live/webhooks/${id}?since=${sinceSeconds}`);
    expect(withSeconds.body).toContain(`?since=${encodeURIComponent(sinceSeconds)}&amp;before=`);
    const pending = await owner.get(`/portal/live/webhooks/${id}?status=pending`);
    expect(pending.body).toContain(`?status=pending&amp;before=${all[49]!.id}`);
    const unknown = await owner.get(`/portal/live/webhooks/${id}?before=dlv_${'0'.repeat(32)}`);
    expect(unknown.status).toBe(200);
    expect(detailLinks(unknown.body)).toEqual([]);
    const junk = await owner.get(`/portal/live/webhooks/${id}?before=%27;drop`);
    expect(detailLinks(junk.body)).toEqual(all.slice(0, 50).map((r) => r.id));
    const badTime = await owner.get(`/portal/live/webhooks/${id}?since=yesterday`);
    expect(badTime.status).toBe(400);
    expect(text(badTime.body)).toContain('is not a date and time. Use the picker, in UTC.');
  });

  it('audits each change', async () => {
    // Its own partner: the destination added is the only one listed.
    const partner = await createPartnersRepo(h.t.db).create(`Audit ${n}`);
    const owner = await h.signedIn(email('audit'), 'owner', partner);
    const { id } = await addDestination(owner, 'live');
    await owner.get(`/portal/live/webhooks/${id}`);
    expect((await owner.post(`/portal/live/webhooks/${id}/ping`)).status).toBe(303);
    await owner.get(`/portal/live/webhooks/${id}/remove`);
    expect((await owner.post(`/portal/live/webhooks/${id}/remove`)).location).toBe(
      `/portal/live/webhooks?removed=${id}`,
    );
    // Named by its URL, not its id; its delivery log kept and reachable, read-only.
    const listed = await owner.get(`/portal/live/webhooks?removed=${id}`);
    expect(text(listed.body)).toContain(
      'https://hooks.example.com/x is removed. Its delivery log is kept.',
    );
    expect(text(listed.body)).not.toContain(id);
    const gone = await owner.get(`/portal/live/webhooks/${id}`);
    expect(gone.status).toBe(200);
    expect(text(gone.body)).toContain('Removed');
    expect(text(gone.body)).toContain('Its delivery log is kept and shown here, read-only.');
    for (const action of ['/ping', '/edit', '/rotate', '/disable', '/remove', '/replay-failed'])
      expect(gone.body).not.toContain(`action="/portal/live/webhooks/${id}${action}"`);
    expect(gone.body).not.toContain(`href="/portal/live/webhooks/${id}/remove"`);
    const dlv = /deliveries\/(dlv_\w+)"/.exec(gone.body)![1]!;
    const detail = await owner.get(`/portal/live/webhooks/${id}/deliveries/${dlv}`);
    expect(detail.status).toBe(200);
    expect(detail.body).not.toContain('Replay this delivery');
    expect((await owner.post(`/portal/live/webhooks/${id}/ping`)).status).toBe(404);
    await owner.get('/portal/live/webhooks/inbound');
    const inbound = await owner.post('/portal/live/webhooks/inbound/secret');
    expect(text(inbound.body)).toContain('Your live inbound secret');
    expect(text(inbound.body)).toContain('store it where your sender signs inbound requests');
    // The address bar shows the inbound page, not the action's address.
    expect(inbound.headers['hx-push-url']).toBe('/portal/live/webhooks/inbound');
    const { rows } = await h.t.db.query<{ action: string }>(
      `SELECT action FROM portal_audit_log WHERE actor = $1 AND action LIKE '%.%' AND action NOT LIKE 'member.%'
       ORDER BY created_at, id`,
      [`audit-${n}@example.com`],
    );
    expect(rows.map((r) => r.action)).toEqual([
      'webhook.added',
      'webhook.pinged',
      'webhook.removed',
      'inbound.secret_set',
    ]);
  });
});

describe('a pending delivery', () => {
  it('shows when it is sent next', async () => {
    const owner = await h.signedIn(email('pending'), 'owner');
    const { id } = await addDestination(owner, 'live');
    await owner.get(`/portal/live/webhooks/${id}`);
    await owner.post(`/portal/live/webhooks/${id}/ping`);
    const { rows } = await h.t.db.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE destination_id = $1',
      [id],
    );
    const dlv = rows[0]!.id;
    // Not yet tried (no dispatcher runs here): due at once.
    const first = await owner.get(`/portal/live/webhooks/${id}`);
    expect(text(first.body)).toMatch(/Pending sending now/);
    // One attempt failed: the dispatcher's state after a 500, the retry in 5 minutes.
    await h.t.db.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, destination_id, ok, status_code, duration_ms)
       VALUES ($1, 1, $2, false, 500, 12)`,
      [dlv, id],
    );
    const { rows: due } = await h.t.db.query<{ at: Date }>(
      `UPDATE webhook_deliveries SET attempts = 1, last_response_code = 500,
         next_attempt_at = now() + interval '5 minutes' WHERE id = $1 RETURNING next_attempt_at AS at`,
      [dlv],
    );
    const at = `${due[0]!.at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    const log = await owner.get(`/portal/live/webhooks/${id}`);
    expect(text(log.body)).toContain(`Pending retry 2 at ${at}`);
    const detail = await owner.get(`/portal/live/webhooks/${id}/deliveries/${dlv}`);
    expect(text(detail.body)).toContain(`Pending (retry 2 at ${at} )`);
  });
});

describe('delivery detail', () => {
  it('lists the headers as the dispatcher sends them, sequence numbers and user-agent included', async () => {
    const partner = await createPartnersRepo(h.t.db).create(`Headers ${n}`);
    const owner = await h.signedIn(email('headers'), 'owner', partner);
    const { id } = await addDestination(owner, 'live');
    const [product] = await seedProducts(h.t.db, partner.id, [
      { slug: `hdr-${n}`, displayName: 'Hdr USDC', environment: 'live', status: 'active', days: 0 },
    ]);
    const tx = `0x${'cd'.repeat(32)}` as const;
    const event = (await createEventsRepo(h.t.db).insert({
      partnerId: partner.id,
      environment: 'live',
      productId: product!.id,
      eventType: 'deposit.confirmed',
      dedupeKey: `deposit.confirmed:31337:${tx}:0`,
      payload: { product_slug: product!.slug, tx_hash: tx },
      occurredAt: new Date(),
      chain: { chainId: 31337, blockNumber: 1n, blockHash: tx, txHash: tx, logIndex: 0 },
    }))!;
    expect(event.productSeq).not.toBeNull();
    const { rows } = await h.t.db.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE destination_id = $1',
      [id],
    );
    const detail = await owner.get(`/portal/live/webhooks/${id}/deliveries/${rows[0]!.id}`);
    const sent = /<h2>Headers as sent<\/h2>\s*<pre>([\s\S]*?)<\/pre>/.exec(detail.body)![1]!;
    const names = sent
      .trim()
      .split('\n')
      .map((l) => l.split(':')[0]);
    expect(names).toEqual([
      'content-type',
      'x-service-event',
      'x-service-signature',
      'x-service-event-id',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
      'x-service-sequence',
      'x-service-partner-sequence',
      'user-agent',
    ]);
    expect(sent).toContain(`x-service-sequence: ${event.productSeq}\n`);
    expect(sent).toContain(`x-service-partner-sequence: ${event.partnerSeq}\n`);
    expect(sent).toContain('user-agent: partner-yield-service-webhooks/1.0');
  });
});

describe('inbound secret rotation', () => {
  it('asks for a grace period; the old secret verifies until it ends, and not after', async () => {
    const partner = await createPartnersRepo(h.t.db).create(`Rotation ${n}`);
    const owner = await h.signedIn(email('rotation'), 'owner', partner);
    const apiKey = (await createApiKeysRepo(h.t.db).create(partner.id, 'live', 'rotation')).key;
    const ping = async (secret: string, key: string) => {
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
      return res.statusCode;
    };
    const secretOf = (body: string) => /<code id="new-secret"[^>]*>([^<]+)<\/code>/.exec(body)![1]!;
    // The first secret: one click.
    await owner.get('/portal/live/webhooks/inbound');
    const old = secretOf((await owner.post('/portal/live/webhooks/inbound/secret')).body);
    expect(await ping(old, 'a-1')).toBe(200);
    // Replacing it is not one click: the page links to a confirmation, a bare POST is refused.
    const page = await owner.get('/portal/live/webhooks/inbound');
    expect(page.body).toContain('href="/portal/live/webhooks/inbound/secret/rotate"');
    const bare = await owner.post('/portal/live/webhooks/inbound/secret');
    expect([bare.status, text(bare.body)]).toEqual([
      400,
      expect.stringContaining('Choose a grace period'),
    ]);
    expect(await ping(old, 'a-2')).toBe(200);
    const confirm = await owner.get('/portal/live/webhooks/inbound/secret/rotate');
    expect(text(confirm.body)).toContain('How long should the old secret keep verifying?');
    const rotated = await owner.post('/portal/live/webhooks/inbound/secret', { grace: '1h' });
    expect(text(rotated.body)).toContain('The old secret still verifies until');
    const fresh = secretOf(rotated.body);
    expect(fresh).not.toBe(old);
    // During the grace period both verify (the new one once the API's read cache has seen the
    // change: within its poll, a second), and the page says until when.
    await expect.poll(() => ping(fresh, `b-${Math.random()}`), { timeout: 5000 }).toBe(200);
    expect(await ping(old, 'b-2')).toBe(200);
    expect(text((await owner.get('/portal/live/webhooks/inbound')).body)).toMatch(
      /The previous secret \( sha256:\w+ \) still verifies until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/,
    );
    // The grace period's end brought near (the hour passing, by the database's clock), then past.
    await h.t.db.query(
      `UPDATE inbound_secrets SET previous_expires_at = now() + interval '1500 milliseconds'
       WHERE partner_id = $1`,
      [partner.id],
    );
    await new Promise((r) => setTimeout(r, 2500));
    expect(await ping(old, 'c-1')).toBe(401);
    expect(await ping(fresh, 'c-2')).toBe(200);
    expect(text((await owner.get('/portal/live/webhooks/inbound')).body)).not.toContain(
      'The previous secret',
    );
    // "None" ends the old secret at once.
    await owner.get('/portal/live/webhooks/inbound/secret/rotate');
    const third = secretOf(
      (await owner.post('/portal/live/webhooks/inbound/secret', { grace: '0' })).body,
    );
    await expect.poll(() => ping(third, `d-${Math.random()}`), { timeout: 5000 }).toBe(200);
    expect(await ping(fresh, 'd-1')).toBe(401);
    const { rows } = await h.t.db.query<{ target: string }>(
      `SELECT target FROM portal_audit_log WHERE partner_id = $1 AND action = 'inbound.secret_set'
       ORDER BY created_at, id`,
      [partner.id],
    );
    expect(rows.map((r) => r.target)).toEqual([
      'created',
      'rotated, grace 1 h',
      'rotated, grace 0',
    ]);
  });
});

describe('inbound page', () => {
  it('lists inbound events with their keys, counts duplicates and conflicts, and links to the lifecycle event matched', async () => {
    const partner = await createPartnersRepo(h.t.db).create(`Inbound ${n}`);
    const owner = await h.signedIn(email('inbound'), 'owner', partner);
    await owner.get('/portal/live/webhooks/inbound');
    const created = await owner.post('/portal/live/webhooks/inbound/secret');
    const secret = /<code id="new-secret"[^>]*>([^<]+)<\/code>/.exec(created.body)![1]!;
    const [product] = await seedProducts(h.t.db, partner.id, [
      {
        slug: `inb-${n}`,
        displayName: 'Inbound USDC',
        environment: 'live',
        status: 'active',
        days: 0,
      },
    ]);
    const apiKey = (await createApiKeysRepo(h.t.db).create(partner.id, 'live', 'inbound')).key;
    const tx = `0x${'ab'.repeat(32)}` as const;
    // The lifecycle event the indexer stores for that transaction's Deposit log.
    const lifecycle = (await createEventsRepo(h.t.db).insert({
      partnerId: partner.id,
      environment: 'live',
      productId: product!.id,
      eventType: 'deposit.confirmed',
      dedupeKey: `deposit.confirmed:31337:${tx}:0`,
      payload: { product_slug: product!.slug, tx_hash: tx },
      occurredAt: new Date('2026-03-01T12:00:05Z'),
      chain: {
        chainId: 31337,
        blockNumber: 12n,
        blockHash: `0x${'cd'.repeat(32)}`,
        txHash: tx,
        logIndex: 0,
      },
    }))!;
    const send = async (key: string, event: string, data: Record<string, unknown>) => {
      const raw = JSON.stringify({ occurred_at: '2026-03-01T12:00:00Z', data });
      const res = await h.app.inject({
        method: 'POST',
        url: '/api/partner/webhooks/inbound',
        headers: {
          'content-type': 'application/json',
          'x-api-key': apiKey,
          'x-service-event': event,
          'idempotency-key': key,
          'x-service-signature': signPayload(secret, raw),
        },
        payload: raw,
      });
      return { status: res.statusCode, body: res.json() as { duplicate?: boolean; code?: string } };
    };
    const deposit = {
      product_slug: product!.slug,
      chain_id: 31337,
      tx_hash: tx,
      user_address: `0x${'12'.repeat(20)}`,
      amount: '1250.5',
    };
    expect((await send('dep-1', 'deposit.submitted', deposit)).body.duplicate).toBe(false);
    expect((await send('dep-1', 'deposit.submitted', deposit)).body.duplicate).toBe(true);
    expect((await send('dep-1', 'deposit.submitted', deposit)).body.duplicate).toBe(true);
    const conflict = await send('dep-1', 'deposit.submitted', { ...deposit, amount: '1' });
    expect([conflict.status, conflict.body.code]).toEqual([409, 'idempotency_conflict']);
    expect((await send('ping-1', 'ping', { hello: 'portal' })).status).toBe(200);

    const inbound = await owner.get('/portal/live/webhooks/inbound');
    const rows = [...inbound.body.matchAll(/<tr>(.*?)<\/tr>/gs)].map((m) => text(m[1]!));
    const dep = rows.find((r) => r.includes('dep-1'))!;
    expect(dep).toMatch(
      /deposit\.submitted dep-1 2 duplicates absorbed last \d{4}-\d\d-\d\d \d\d:\d\d UTC 1 conflict refused \(409\) last \d{4}/,
    );
    expect(dep).toContain(lifecycle.id);
    expect(rows.find((r) => r.includes('ping-1'))).toMatch(/ping ping-1 — — —/);
    // Newest first.
    expect(rows.findIndex((r) => r.includes('ping-1'))).toBeLessThan(rows.indexOf(dep));
    const link = `/portal/live/webhooks/events/${lifecycle.id}`;
    expect(inbound.body).toContain(`href="${link}"`);

    const event = await owner.get(link);
    expect(event.status).toBe(200);
    const words = text(event.body);
    expect(words).toContain('deposit.confirmed');
    expect(words).toContain('Inbound USDC');
    expect(words).toMatch(/deposit\.submitted with idempotency key dep-1 ?, received/);
    expect(words).toContain(tx);
    // Another partner's member, and the other environment, never see it.
    const stranger = await h.signedIn(email('inbound-stranger'), 'owner');
    expect((await stranger.get(link)).status).toBe(404);
    expect((await owner.get(`/portal/test/webhooks/events/${lifecycle.id}`)).status).toBe(404);
  });
});
