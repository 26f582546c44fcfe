/**
 * Editing a webhook destination and disabling it by hand in the portal (routes/webhook-edit.ts),
 * over HTTP (inject), on every engine: a new URL checked as on creation (http:// refused in words),
 * event types from the catalogue only, a note kept with the reason of a manual disable, pending
 * deliveries failed and replayed on re-enabling, the automatic disable shown apart; every action
 * checked against role, environment, partner and CSRF, and audited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createWebhookDeliveriesRepo } from '../../src/db/webhook-deliveries.ts';
import { createWebhookHealthRepo } from '../../src/db/webhook-health.ts';
import { storageEngines } from '../helpers/db.ts';
import { type Client, type Harness, portalHarness, text } from './harness.ts';

describe.each(storageEngines())('editing and disabling webhook destinations on %s', (engine) => {
  let h: Harness;
  let n = 0;
  const email = (tag: string) => `${tag}-${++n}@example.com`;
  /** Each test its own partner: a destination list then holds only that test's destinations. */
  const newPartner = () => createPartnersRepo(h.t.db).create(`Partner ${++n}`);

  beforeAll(async () => {
    h = await portalHarness({ engine });
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
    return id!;
  }

  /** Posts the edit form with repeated event_types fields, as the browser sends checkboxes. */
  async function postEdit(c: Client, env: string, id: string, url: string, types: string[]) {
    await c.get(`/portal/${env}/webhooks/${id}/edit`);
    const form = new URLSearchParams({ _csrf: c.csrf, url });
    for (const t of types) form.append('event_types', t);
    const res = await h.app.inject({
      method: 'POST',
      url: `/portal/${env}/webhooks/${id}/edit`,
      headers: {
        cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: form.toString(),
    });
    return { status: res.statusCode, body: res.body, location: res.headers.location };
  }

  const auditOf = async (actor: string) =>
    (
      await h.t.db.query<{ action: string; target: string | null; environment: string | null }>(
        `SELECT action, target, environment FROM portal_audit_log
         WHERE actor = $1 AND action LIKE 'webhook.%' ORDER BY created_at, id`,
        [actor],
      )
    ).rows;

  const find = async (id: string) =>
    (
      await h.t.db.query<{
        url: string;
        event_types: string[] | null;
        disabled_by: string | null;
        disabled_reason: string | null;
      }>(
        'SELECT url, event_types, disabled_by, disabled_reason FROM webhook_destinations WHERE id = $1',
        [id],
      )
    ).rows[0]!;

  it('edits the URL and the event types; http:// and unknown types refused in words; audited', async () => {
    const actor = email('edit');
    const owner = await h.signedIn(actor, 'owner', await newPartner());
    const id = await addDestination(owner, 'live');

    const form = await owner.get(`/portal/live/webhooks/${id}/edit`);
    expect(form.status).toBe(200);
    expect(form.body).toContain('value="https://hooks.example.com/x"');
    // Says what a new URL resets (the automatic-disable clock), not a "clean health record".
    expect(text(form.body)).toContain('A new URL restarts the automatic-disable clock');
    expect(text(form.body)).toContain("still include the old URL's deliveries");
    expect(text(form.body)).not.toContain('clean health record');
    expect(text(form.body)).toContain('none ticked: every type');

    const http = await postEdit(owner, 'live', id, 'http://hooks.example.com/plain', []);
    expect(http.status).toBe(400);
    expect(text(http.body)).toContain(
      'That URL does not work: webhook destinations must be https:// URLs (got http); plain HTTP is never delivered to.',
    );
    expect(http.body).toContain('value="http://hooks.example.com/plain"'); // kept to correct it
    const ftp = await postEdit(owner, 'live', id, 'ftp://nope.example.com/', []);
    expect(text(ftp.body)).toContain('must be https:// URLs (got ftp).');
    expect(text(ftp.body)).not.toContain('plain HTTP');
    const unknown = await postEdit(owner, 'live', id, 'https://hooks.example.com/x', ['no.such']);
    expect(unknown.status).toBe(400);
    expect(text(unknown.body)).toContain('There is no event type no.such: pick from the list.');
    expect(await find(id)).toMatchObject({ url: 'https://hooks.example.com/x', event_types: null });

    const saved = await postEdit(owner, 'live', id, ' https://hooks.example.com/new ', [
      'deposit.confirmed',
      'tvl_alert',
    ]);
    expect(saved.status).toBe(303);
    expect(saved.location).toBe(`/portal/live/webhooks/${id}?notice=updated`);
    expect(await find(id)).toMatchObject({
      url: 'https://hooks.example.com/new',
      event_types: ['deposit.confirmed', 'tvl_alert'],
    });
    const page = text((await owner.get(saved.location!)).body);
    expect(page).toContain('Saved. The changes apply to what is sent from now on.');
    expect(page).toMatch(/Events deposit\.confirmed ?, tvl_alert/);
    // The form shows the current types ticked.
    const again = await owner.get(`/portal/live/webhooks/${id}/edit`);
    expect(again.body).toMatch(/value="deposit\.confirmed" checked/);
    expect(again.body).not.toMatch(/value="vault_pause" checked/);
    // None ticked: every type.
    expect((await postEdit(owner, 'live', id, 'https://hooks.example.com/new', [])).status).toBe(
      303,
    );
    expect((await find(id)).event_types).toBeNull();

    expect(await auditOf(actor)).toEqual([
      { action: 'webhook.added', environment: 'live', target: `${id} https://hooks.example.com/x` },
      {
        action: 'webhook.updated',
        environment: 'live',
        target: `${id} url https://hooks.example.com/x → https://hooks.example.com/new; events all → deposit.confirmed, tvl_alert`,
      },
      {
        action: 'webhook.updated',
        environment: 'live',
        target: `${id} events deposit.confirmed, tvl_alert → all`,
      },
    ]);
  });

  it('refuses moving the URL to a non-public address in words, the form kept; keeping an old one works', async () => {
    const actor = email('literal');
    const owner = await h.signedIn(actor, 'owner', await newPartner());
    const id = await addDestination(owner, 'live');
    for (const [url, said] of [
      ['https://192.168.0.10/hook', '192.168.0.10 is a private address'],
      ['https://[::1]:8443/hook', '[::1] is a loopback address'],
      ['https://169.254.169.254/', '169.254.169.254 is a link-local address'],
      ['https://[fe80::1]/hook', '[fe80::1] is a link-local address'],
    ] as const) {
      const refused = await postEdit(owner, 'live', id, url, ['tvl_alert']);
      expect(refused.status, url).toBe(400);
      expect(text(refused.body), url).toContain(
        `That URL does not work: ${said}; webhooks are sent only to public addresses: use a public host name or address.`,
      );
      expect(refused.body, url).toContain(`value="${url}" aria-invalid="true"`);
      expect(refused.body, url).toMatch(/value="tvl_alert" checked/);
    }
    expect(await find(id)).toMatchObject({ url: 'https://hooks.example.com/x', event_types: null });

    // A destination stored at a private address before this check (or while the operator allowed
    // its range): its event types can still be edited, the form sending its URL back unchanged.
    await h.t.db.query(
      "UPDATE webhook_destinations SET url = 'https://10.9.8.7/hook' WHERE id = $1",
      [id],
    );
    const form = await owner.get(`/portal/live/webhooks/${id}/edit`);
    expect(form.body).toContain('value="https://10.9.8.7/hook"');
    const kept = await postEdit(owner, 'live', id, 'https://10.9.8.7/hook', ['vault_pause']);
    expect(kept.status, text(kept.body).slice(0, 300)).toBe(303);
    expect(await find(id)).toMatchObject({
      url: 'https://10.9.8.7/hook',
      event_types: ['vault_pause'],
    });
    expect((await auditOf(actor)).map((r) => r.target)).toEqual([
      `${id} https://hooks.example.com/x`,
      `${id} events all → vault_pause`,
    ]);
  });

  it('disables by hand with a note: pending deliveries failed, who and why shown, re-enabling replays them', async () => {
    const actor = email('disable');
    const partner = await newPartner();
    const owner = await h.signedIn(actor, 'owner', partner);
    const id = await addDestination(owner, 'live');
    const deliveries = createWebhookDeliveriesRepo(h.t.db);
    const event = (await createEventsRepo(h.t.db).insert({
      partnerId: partner.id,
      environment: 'live',
      productId: null,
      eventType: 'vault_pause',
      dedupeKey: `vault_pause:edit-test:${n}`,
      payload: { slug: 'core', status: 'paused' },
      occurredAt: new Date(),
    }))!;
    expect(await deliveries.list({ eventId: event.id, destinationId: id })).toEqual([
      expect.objectContaining({ status: 'pending' }),
    ]);

    const confirm = await owner.get(`/portal/live/webhooks/${id}/disable`);
    expect(confirm.status).toBe(200);
    expect(text(confirm.body)).toContain('When you re-enable it, all of them are sent again.');
    const long = await owner.post(`/portal/live/webhooks/${id}/disable`, { note: 'x'.repeat(201) });
    expect(long.status).toBe(400);
    expect(text(long.body)).toContain('Keep the note to 200 characters');
    await owner.get(`/portal/live/webhooks/${id}/disable`);
    const done = await owner.post(`/portal/live/webhooks/${id}/disable`, { note: 'moving hosts' });
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/portal/live/webhooks/${id}?notice=disabled`);

    const page = await owner.get(done.location!);
    const words = text(page.body);
    expect(words).toContain('Disabled. Nothing is sent to it until you re-enable it');
    expect(words).toMatch(
      new RegExp(
        `Disabled by your team Disabled by ${actor.replace('.', '\\.')} on \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC \\(“moving hosts”\\)\\.`,
      ),
    );
    expect(words).toContain('Re-enable and replay what failed');
    expect(page.body).not.toContain(`href="/portal/live/webhooks/${id}/disable"`);
    expect(text((await owner.get('/portal/live/webhooks')).body)).toContain(
      'Disabled by your team',
    );
    expect(await find(id)).toMatchObject({ disabled_by: 'manual' });
    const [failed] = await deliveries.list({ eventId: event.id, destinationId: id });
    expect(failed).toMatchObject({ status: 'failed', lastError: 'destination disabled' });

    // Twice: refused; the confirmation page sends back to the destination.
    expect((await owner.get(`/portal/live/webhooks/${id}/disable`)).location).toBe(
      `/portal/live/webhooks/${id}`,
    );
    await owner.get(`/portal/live/webhooks/${id}`);
    const twice = await owner.post(`/portal/live/webhooks/${id}/disable`, {});
    expect(twice.status).toBe(409);
    expect(text(twice.body)).toContain('This destination is already disabled.');

    // Re-enabled: the failed delivery is replayed.
    await owner.get(`/portal/live/webhooks/${id}`);
    const enabled = await owner.post(`/portal/live/webhooks/${id}/enable`);
    expect(enabled.location).toBe(`/portal/live/webhooks/${id}?notice=enabled`);
    const replays = await deliveries.list({ eventId: event.id, destinationId: id });
    expect(replays).toEqual([
      expect.objectContaining({ status: 'pending', replayOf: failed!.id }),
      expect.objectContaining({ id: failed!.id, status: 'failed' }),
    ]);
    expect((await find(id)).disabled_by).toBeNull();

    // Replay failed: nothing when every failed event is already pending again, in words.
    const since = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
    await owner.get(`/portal/live/webhooks/${id}`);
    const nothing = await owner.post(`/portal/live/webhooks/${id}/replay-failed`, { since });
    expect(nothing.status).toBe(303);
    const nothingSaid = text((await owner.get(nothing.location!)).body);
    expect(nothingSaid).toContain(
      `Nothing to replay: no failed delivery since ${since.replace('T', ' ')} UTC that is not already pending or delivered again.`,
    );
    expect(nothingSaid).not.toContain('Replay queued');
    // Once that replay failed too, one delivery is queued, and the page says so.
    await h.t.db.query(
      `UPDATE webhook_deliveries SET status = 'failed', failed_at = now()
       WHERE destination_id = $1 AND status = 'pending'`,
      [id],
    );
    const one = await owner.post(`/portal/live/webhooks/${id}/replay-failed`, { since });
    expect(text((await owner.get(one.location!)).body)).toContain('1 delivery queued');

    expect((await auditOf(actor)).map((r) => [r.action, r.target])).toEqual([
      ['webhook.added', `${id} https://hooks.example.com/x`],
      ['webhook.disabled', `${id} 1 pending failed: moving hosts`],
      ['webhook.enabled', `${id} 1 replayed`],
      ['webhook.replayed', `${id} 0 failed since ${since.replace('T', ' ')} UTC`],
      ['webhook.replayed', `${id} 1 failed since ${since.replace('T', ' ')} UTC`],
    ]);
  });

  it('shows a destination the health job disabled apart from one disabled by hand', async () => {
    const owner = await h.signedIn(email('auto'), 'owner', await newPartner());
    const id = await addDestination(owner, 'live');
    // As the dispatcher records it after a failed attempt, six days ago.
    await h.t.db.query(
      `UPDATE webhook_destinations SET failing_since = now() - interval '6 days' WHERE id = $1`,
      [id],
    );
    expect(await createWebhookHealthRepo(h.t.db).disableFailing()).toEqual([
      expect.objectContaining({ id }),
    ]);
    const words = text((await owner.get(`/portal/live/webhooks/${id}`)).body);
    expect(words).toContain(
      'Disabled automatically Disabled automatically: every delivery attempt',
    );
    expect(words).not.toContain('Disabled by your team');
    expect(text((await owner.get('/portal/live/webhooks')).body)).toContain(
      'Disabled automatically: failing',
    );
    // Disabling it by hand again is refused; its reason stays.
    await owner.get(`/portal/live/webhooks/${id}`);
    expect((await owner.post(`/portal/live/webhooks/${id}/disable`, {})).status).toBe(409);
    expect((await find(id)).disabled_by).toBe('health');
  });

  it('checks role, environment, partner and CSRF on every edit and disable action', async () => {
    const partner = await newPartner();
    const owner = await h.signedIn(email('roles-owner'), 'owner', partner);
    const live = await addDestination(owner, 'live');
    const test = await addDestination(owner, 'test');
    const routes = (env: string, id: string): Array<['GET' | 'POST', string]> => [
      ['GET', `/portal/${env}/webhooks/${id}/edit`],
      ['POST', `/portal/${env}/webhooks/${id}/edit`],
      ['GET', `/portal/${env}/webhooks/${id}/disable`],
      ['POST', `/portal/${env}/webhooks/${id}/disable`],
    ];
    const fields = { url: 'https://hooks.example.com/changed' };
    const viewer = await h.signedIn(email('roles-viewer'), 'viewer', partner);
    const developer = await h.signedIn(email('roles-dev'), 'developer', partner);
    await viewer.get('/portal/live/webhooks');
    await developer.get('/portal/live/webhooks');
    for (const [method, url] of [...routes('live', live), ...routes('test', test)]) {
      const res = method === 'GET' ? await viewer.get(url) : await viewer.post(url, fields);
      expect(res.status, `viewer ${method} ${url}`).toBe(403);
      expect(text(res.body)).toContain('As viewer you cannot change');
    }
    for (const [method, url] of routes('live', live)) {
      const res = method === 'GET' ? await developer.get(url) : await developer.post(url, fields);
      expect(res.status, `developer ${method} ${url}`).toBe(403);
    }
    expect(await find(live)).toMatchObject({
      url: 'https://hooks.example.com/x',
      disabled_by: null,
    });
    // The viewer sees the destination, without the edit and disable links.
    const seen = await viewer.get(`/portal/live/webhooks/${live}`);
    expect(seen.status).toBe(200);
    expect(seen.body).not.toContain(`/webhooks/${live}/edit`);
    expect(seen.body).not.toContain(`/webhooks/${live}/disable`);

    // A developer manages test destinations; an admin live ones.
    expect(
      (await postEdit(developer, 'test', test, 'https://hooks.example.com/dev', [])).status,
    ).toBe(303);
    await developer.get(`/portal/test/webhooks/${test}/disable`);
    expect((await developer.post(`/portal/test/webhooks/${test}/disable`)).status).toBe(303);
    const admin = await h.signedIn(email('roles-admin'), 'admin', partner);
    expect(
      (await postEdit(admin, 'live', live, 'https://hooks.example.com/admin', [])).status,
    ).toBe(303);
    expect(await find(live)).toMatchObject({ url: 'https://hooks.example.com/admin' });

    // Another partner's owner, and the other environment: not found.
    const stranger = await h.signedIn(email('roles-stranger'), 'owner', await newPartner());
    await stranger.get('/portal/live/webhooks');
    for (const [method, url] of routes('live', live)) {
      const res = method === 'GET' ? await stranger.get(url) : await stranger.post(url, fields);
      expect(res.status, `stranger ${method} ${url}`).toBe(404);
    }
    expect((await owner.get(`/portal/test/webhooks/${live}/edit`)).status).toBe(404);

    // Without the form's token: refused, nothing changed.
    await owner.get(`/portal/live/webhooks/${live}/edit`);
    for (const url of [
      `/portal/live/webhooks/${live}/edit`,
      `/portal/live/webhooks/${live}/disable`,
    ]) {
      const forged = await owner.post(url, { ...fields, _csrf: 'forged' });
      expect(forged.status, url).toBe(403);
      expect(text(forged.body)).toContain('This form has expired');
    }
    expect(await find(live)).toMatchObject({
      url: 'https://hooks.example.com/admin',
      disabled_by: null,
    });
  });
});
