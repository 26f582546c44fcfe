/**
 * Invitations with states (#31 item 3): an invitee shows as invited until their first sign-in, then
 * active; an invitation not accepted within 7 days expires (its links stop working, the sign-in
 * form mails none) until an owner or admin resends it; one not yet accepted can be cancelled. Each
 * change is audited.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEMBER_ROLES } from '../../src/db/portal-members.ts';
import { ROLE_SUMMARY } from '../../src/portal/roles.ts';
import { type Harness, portalHarness, text } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await portalHarness({ signInLimit: { max: 1000, windowMs: 60_000 } });
});
afterAll(async () => h?.close());

const idOf = async (email: string) =>
  (
    await h.t.db.query<{ id: string }>(
      'SELECT id FROM portal_members WHERE email = $1 AND removed_at IS NULL',
      [email],
    )
  ).rows[0]!.id;

/** The team page's row of `email`, in words. */
async function rowOf(c: Awaited<ReturnType<Harness['signedIn']>>, email: string) {
  const page = await c.get('/portal/live/team');
  const row = [...page.body.matchAll(/<tr>(.*?)<\/tr>/gs)]
    .map((m) => text(m[1]!))
    .find((r) => r.includes(email));
  return row ?? '';
}

describe('invitations', () => {
  it('are invited, then active at the first sign-in', async () => {
    const owner = await h.signedIn('inv-owner@example.com', 'owner');
    await owner.get('/portal/live/team');
    const sent = await owner.post('/portal/live/team', {
      email: 'new-dev@example.com',
      role: 'developer',
    });
    expect(sent.location).toBe('/portal/live/team?invited=new-dev%40example.com');
    expect(await rowOf(owner, 'new-dev@example.com')).toMatch(
      /developer Invited until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/,
    );
    const [link] = h.mailedLinks('new-dev@example.com');
    // The invitee asked for nothing: the mail does not say they did.
    const mail = readdirSync(h.outbox)
      .map((f) => readFileSync(path.join(h.outbox, f), 'utf8'))
      .find((m) => m.includes('To: new-dev@example.com\r\n'))!;
    expect(mail).toContain(
      `If you did not expect an invitation to ${h.partner.name}, ignore this message`,
    );
    expect(mail).not.toContain('did not ask for this');
    const dev = h.client();
    expect((await dev.signInWithLink(link!)).status).toBe(303);
    expect(await rowOf(owner, 'new-dev@example.com')).toMatch(/developer Active/);
  });

  it('expire after 7 days unaccepted: no sign-in until resent', async () => {
    const owner = await h.signedIn('exp-owner@example.com', 'owner');
    await owner.get('/portal/live/team');
    await owner.post('/portal/live/team', { email: 'late@example.com', role: 'viewer' });
    const [firstLink] = h.mailedLinks('late@example.com');
    // Seven days pass (by the database's clock: the invitation's end moved to the past).
    await h.t.db.query(
      `UPDATE portal_members SET invite_expires_at = now() - interval '1 second'
       WHERE email = 'late@example.com'`,
    );
    expect(await rowOf(owner, 'late@example.com')).toMatch(/viewer Invitation expired on /);
    const late = h.client();
    const refused = await late.signInWithLink(firstLink!);
    expect(refused.status).toBe(410);
    expect(text(refused.body)).toContain('This invitation has expired');
    // The sign-in form answers as always, but mails nothing.
    await late.get('/portal/sign-in');
    await late.post('/portal/sign-in', { email: 'late@example.com' });
    expect(h.mailedLinks('late@example.com')).toHaveLength(1);

    // Resent: invited again for 7 days, with a new link that works.
    const id = await idOf('late@example.com');
    expect((await owner.get('/portal/live/team')).body).toContain(`/portal/live/team/${id}/resend`);
    const resent = await owner.post(`/portal/live/team/${id}/resend`);
    expect(resent.location).toBe('/portal/live/team?resent=late%40example.com');
    expect(await rowOf(owner, 'late@example.com')).toMatch(/viewer Invited until /);
    const links = h.mailedLinks('late@example.com');
    expect(links).toHaveLength(2);
    expect((await late.signInWithLink(links[1]!)).status).toBe(303);
    expect(await rowOf(owner, 'late@example.com')).toMatch(/viewer Active/);
    // Accepted: nothing to resend or cancel any more.
    expect((await owner.post(`/portal/live/team/${id}/resend`)).status).toBe(409);

    const { rows } = await h.t.db.query<{ action: string; target: string }>(
      `SELECT action, target FROM portal_audit_log WHERE actor = 'exp-owner@example.com'
       AND action LIKE 'member.invite%' ORDER BY created_at, id`,
    );
    expect(rows).toEqual([
      { action: 'member.invited', target: 'late@example.com (viewer)' },
      { action: 'member.invite_resent', target: 'late@example.com (viewer)' },
    ]);
  });

  it('can be cancelled before they are accepted', async () => {
    const admin = await h.signedIn('cancel-admin@example.com', 'admin');
    await admin.get('/portal/live/team');
    await admin.post('/portal/live/team', { email: 'never@example.com', role: 'developer' });
    const id = await idOf('never@example.com');
    const confirm = await admin.get(`/portal/live/team/${id}/cancel`);
    expect(text(confirm.body)).toContain('Cancel the invitation of never@example.com');
    // Two different words side by side: the change, and the way back (not a second "Cancel").
    const buttons = /<div class="buttons">(.*?)<\/div>/s.exec(confirm.body)?.[1] ?? '';
    expect(buttons).toContain('<button type="submit" class="danger">Cancel invitation</button>');
    expect(buttons).toContain('<a href="/portal/live/team">Keep invitation</a>');
    expect(text(buttons)).not.toMatch(/\bCancel\b(?! invitation)/);
    const done = await admin.post(`/portal/live/team/${id}/cancel`);
    expect(done.location).toBe('/portal/live/team?cancelled=never%40example.com');
    expect(await rowOf(admin, 'never@example.com')).toBe('');
    const [link] = h.mailedLinks('never@example.com');
    const refused = await h.client().signInWithLink(link!);
    expect(refused.status).toBe(410);
    // Said as it is: cancelled (not "expired", not "ask for a new one", which would mail nothing).
    expect(text(refused.body)).toContain('This invitation was cancelled');
    expect(text(refused.body)).toContain(
      `ask an owner or admin of ${h.partner.name} to invite you again`,
    );
    expect(text(refused.body)).not.toMatch(/expired|Ask for a new one/);
    // Only owners act on owners, invitations included.
    await admin.post('/portal/live/team', { email: 'boss@example.com', role: 'owner' });
    expect((await admin.get('/portal/live/team')).status).toBe(200);
    const owner = await h.signedIn('cancel-owner@example.com', 'owner');
    await owner.get('/portal/live/team');
    await owner.post('/portal/live/team', { email: 'boss@example.com', role: 'owner' });
    const bossId = await idOf('boss@example.com');
    await admin.get('/portal/live/team');
    expect((await admin.post(`/portal/live/team/${bossId}/cancel`)).status).toBe(403);
  });
});

describe('the invitation form', () => {
  it('describes each role it offers with the role’s summary from roles.ts', async () => {
    const owner = await h.signedIn('roles-owner@example.com', 'owner');
    const page = (await owner.get('/portal/live/team')).body;
    const radios = [
      ...page.matchAll(/<input type="radio" id="([^"]+)" name="role" value="(\w+)"[^>]*>/g),
    ];
    // An owner may invite every role: one radio each, in the order of MEMBER_ROLES.
    expect(radios.map((m) => m[2])).toEqual([...MEMBER_ROLES]);
    for (const [input, id, role] of radios) {
      const describedBy = /aria-describedby="([^"]+)"/.exec(input!)?.[1];
      expect(describedBy, role).toBe(`${id}-desc`);
      const description = new RegExp(`<p class="hint" id="${describedBy}">([^<]*)</p>`).exec(page);
      expect(description?.[1], role).toBe(ROLE_SUMMARY[role as keyof typeof ROLE_SUMMARY]);
      expect(page, role).toContain(`<label for="${id}">${role}</label>`);
    }
    expect(page).toMatch(/<fieldset class="field role-choices">\s*<legend>Role<\/legend>/);
    // The developer role is the one chosen unless said.
    expect(radios.find((m) => m[2] === 'developer')![0]).toContain(' checked ');
    // An admin is offered no owner.
    const admin = await h.signedIn('roles-admin@example.com', 'admin');
    const offered = [
      ...(await admin.get('/portal/live/team')).body.matchAll(/name="role" value="(\w+)"/g),
    ].map((m) => m[1]);
    expect(offered).toEqual(MEMBER_ROLES.filter((r) => r !== 'owner'));
  });
});
