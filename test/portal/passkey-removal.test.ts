/**
 * Removing a passkey needs a fresh sign-in (#31 item 2): a session that began more than 10 minutes
 * ago is asked to sign in again and removes nothing; a fresh one removes the passkey, audited. The
 * Redis session store says "fresh" the same way (real Redis). Signing in with a removed passkey is
 * refused in browser.test.ts, with Chromium's virtual authenticator. Signing in again returns to
 * the removal page (a checked return path, return-path.ts; by passkey in browser.test.ts), and a
 * forged return path to another site is dropped at every step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPortalPasskeysRepo } from '../../src/db/portal-passkeys.ts';
import { hashSessionId } from '../../src/db/portal-sessions.ts';
import { SESSION_COOKIE } from '../../src/portal/context.ts';
import { createRedisSessionStore } from '../../src/portal/redis-sessions.ts';
import { issueSignInUrl } from '../../src/portal/sign-in-links.ts';
import { createRedis } from '../../src/redis.ts';
import { testRedisUrl, uniqueRedisPrefix } from '../helpers/redis.ts';
import { type Harness, PUBLIC_URL, portalHarness, text, unescapeHtml } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await portalHarness();
});
afterAll(async () => h?.close());

async function withPasskey(email: string, name: string) {
  const c = await h.signedIn(email, 'developer');
  const { rows } = await h.t.db.query<{ id: string }>(
    'SELECT id FROM portal_members WHERE email = $1',
    [email],
  );
  const id = `cred-${name.replace(/\W/g, '-')}`;
  await createPortalPasskeysRepo(h.t.db).add({
    id,
    memberId: rows[0]!.id,
    publicKey: new Uint8Array([1, 2, 3]),
    counter: 0,
    transports: ['internal'],
    name,
  });
  return { c, id, remove: `/portal/live/account/passkeys/${id}/remove` };
}

const passkeysOf = async (email: string) =>
  (
    await h.t.db.query<{ name: string }>(
      `SELECT k.name FROM portal_passkeys k JOIN portal_members m ON m.id = k.member_id
       WHERE m.email = $1`,
      [email],
    )
  ).rows.map((r) => r.name);

describe('removing a passkey', () => {
  it('from a fresh session: listed, confirmed, removed and audited', async () => {
    const { c, remove } = await withPasskey('fresh@example.com', 'Old phone');
    const account = await c.get('/portal/live/account');
    expect(text(account.body)).toContain('Old phone');
    expect(account.body).toContain(`href="${remove}"`);
    const confirm = await c.get(remove);
    expect(confirm.status).toBe(200);
    expect(text(confirm.body)).toContain('Remove the passkey Old phone');
    const done = await c.post(remove);
    expect(done.status).toBe(303);
    expect(done.location).toBe('/portal/live/account?passkey=removed');
    expect(await passkeysOf('fresh@example.com')).toEqual([]);
    const { rows } = await h.t.db.query(
      `SELECT action, target FROM portal_audit_log WHERE actor = 'fresh@example.com'
       AND action = 'passkey.removed'`,
    );
    expect(rows).toEqual([{ action: 'passkey.removed', target: 'Old phone' }]);
    // Gone: its page is a 404, not another member's passkey.
    expect((await c.get(remove)).status).toBe(404);
  });

  it('from a session older than 10 minutes: asked to sign in again, nothing removed', async () => {
    const { c, remove } = await withPasskey('stale@example.com', 'Lost laptop');
    await c.get(remove); // a form token for the POST below
    const session = c.cookies.get(SESSION_COOKIE)!;
    await h.t.db.query(
      `UPDATE portal_sessions SET created_at = now() - interval '11 minutes' WHERE id_hash = $1`,
      [hashSessionId(session)],
    );
    const page = await c.get(remove);
    expect(page.status).toBe(403);
    expect(text(page.body)).toContain('Removing a passkey needs a fresh sign-in');
    expect(page.body).toContain(`href="/portal/sign-in?return_to=${encodeURIComponent(remove)}"`);
    const post = await c.post(remove);
    expect(post.status).toBe(403);
    expect(await passkeysOf('stale@example.com')).toEqual(['Lost laptop']);
  });

  it('after signing in again by email link, returns to the removal page and removes', async () => {
    const { c, remove } = await withPasskey('again@example.com', 'Spare key');
    await c.get('/portal/live/account');
    await h.t.db.query(
      `UPDATE portal_sessions SET created_at = now() - interval '11 minutes' WHERE id_hash = $1`,
      [hashSessionId(c.cookies.get(SESSION_COOKIE)!)],
    );
    const asked = await c.get(remove);
    expect(asked.status).toBe(403);
    const signIn = /<a class="button" href="([^"]+)">Sign in again<\/a>/.exec(asked.body)?.[1];
    expect(signIn).toBeDefined();
    // The sign-in page carries the path in its form, and the mailed link carries it on.
    const form = await c.get(unescapeHtml(signIn!));
    expect(form.status).toBe(200);
    expect(form.body).toContain(`name="return_to" value="${remove}"`);
    expect(form.body).toContain(`data-return="${remove}"`);
    const before = h.mailedLinks('again@example.com').length;
    const sent = await c.post('/portal/sign-in', {
      email: 'again@example.com',
      return_to: remove,
    });
    expect(sent.status).toBe(200);
    const link = h.mailedLinks('again@example.com')[before];
    expect(link).toContain(`&return_to=${encodeURIComponent(remove)}`);
    const back = await c.signInWithLink(link!);
    expect(back.status).toBe(303);
    expect(back.location).toBe(remove);
    const confirm = await c.get(back.location!);
    expect(confirm.status).toBe(200);
    expect(text(confirm.body)).toContain('Remove the passkey Spare key');
    expect((await c.post(remove)).location).toBe('/portal/live/account?passkey=removed');
    expect(await passkeysOf('again@example.com')).toEqual([]);
  });

  it('never returns to another site: a forged return path lands on the keys page', async () => {
    await h.signedIn('forged@example.com', 'developer');
    const { rows } = await h.t.db.query<{ id: string }>(
      'SELECT id FROM portal_members WHERE email = $1',
      ['forged@example.com'],
    );
    for (const forged of ['//evil.com', '/\\evil.com', 'https://evil.com', '%2F%2Fevil.com']) {
      const c = h.client();
      c.ip = '127.0.0.77'; // its own sign-in limit: the other tests' addresses keep theirs
      const page = await c.get(`/portal/sign-in?return_to=${encodeURIComponent(forged)}`);
      expect(page.body).not.toContain('return_to');
      expect(page.body).not.toContain('evil.com');
      // A link made by hand with the forged path: the link page drops it, and so does the
      // sign-in if the form is forged too.
      const url = await issueSignInUrl(h.t.db, PUBLIC_URL, rows[0]!.id);
      const linkPage = await c.get(`${url}&return_to=${encodeURIComponent(forged)}`);
      expect(linkPage.status).toBe(200);
      expect(linkPage.body).not.toContain('evil.com');
      const done = await c.post('/portal/sign-in/link', {
        token: new URL(url).searchParams.get('token')!,
        return_to: forged,
      });
      expect(done.status, forged).toBe(303);
      expect(done.location, forged).toBe('/portal/live/keys');
    }
  });

  it('cannot reach another member’s passkey', async () => {
    const { remove } = await withPasskey('owner-of-key@example.com', 'Their key');
    const other = await h.signedIn('someone-else@example.com', 'owner');
    expect((await other.get(remove)).status).toBe(404);
    await other.get('/portal/live/account');
    expect((await other.post(remove)).status).toBe(404);
    expect(await passkeysOf('owner-of-key@example.com')).toEqual(['Their key']);
  });
});

describe.skipIf(!testRedisUrl())('Redis sessions', () => {
  it('are fresh for 10 minutes after sign-in, and never once ended', async () => {
    const redis = createRedis(testRedisUrl()!, { keyPrefix: uniqueRedisPrefix() });
    try {
      const store = createRedisSessionStore(redis, 60_000);
      const id = await store.create('mbr_fresh', {});
      expect(await store.signedInRecently(id)).toBe(true);
      // The window passing: the marker expires (Redis ends it; here, at once).
      await redis.pexpire(`pys:portal:f:${hashSessionId(id).toString('hex')}`, 1);
      await new Promise((r) => setTimeout(r, 20));
      expect(await store.signedInRecently(id)).toBe(false);
      const other = await store.create('mbr_fresh', {});
      await store.destroy(other);
      expect(await store.signedInRecently(other)).toBe(false);
      expect(await store.signedInRecently('not-a-session')).toBe(false);
    } finally {
      redis.disconnect();
    }
  });
});
