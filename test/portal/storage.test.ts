/**
 * The portal's storage on both engines (PGlite; PostgreSQL when TEST_DATABASE_URL is set) and the
 * Redis session store (when TEST_REDIS_URL is set): one-time tokens under concurrency, sessions
 * with inactivity and sign-out everywhere, one active member per email, key rolls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo, keyStatus, rollApiKey } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createPortalMembersRepo, MemberExistsError } from '../../src/db/portal-members.ts';
import { createDbSessionStore, type SessionStore } from '../../src/db/portal-sessions.ts';
import { createSignInTokensRepo } from '../../src/db/portal-sign-in-tokens.ts';
import { createRedisSessionStore } from '../../src/portal/redis-sessions.ts';
import { createRedis, type Redis } from '../../src/redis.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { testRedisUrl, uniqueRedisPrefix } from '../helpers/redis.ts';

describe.each(storageEngines())('portal storage on %s', (engine) => {
  let t: TestDatabase;
  let partnerId: string;
  beforeAll(async () => {
    t = await freshDatabase(engine);
    partnerId = (await createPartnersRepo(t.db).create('Acme')).id;
  });
  afterAll(async () => t?.drop());

  it('lets one of many concurrent uses of a token win, and only once', async () => {
    const member = await createPortalMembersRepo(t.db).invite({
      partnerId,
      email: 'race@acme.example',
      role: 'owner',
    });
    const tokens = createSignInTokensRepo(t.db);
    const token = await tokens.issue(member.id);
    const results = await Promise.all(Array.from({ length: 8 }, () => tokens.consume(token)));
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok).map((r) => !r.ok && r.reason)).toEqual(
      Array(7).fill('used'),
    );
    expect(await tokens.consume('x'.repeat(43))).toEqual({ ok: false, reason: 'unknown' });
  });

  it('keeps one active member per email, case-insensitively; a removed one frees it', async () => {
    const members = createPortalMembersRepo(t.db);
    const m = await members.invite({ partnerId, email: 'Dup@Acme.example', role: 'viewer' });
    await expect(
      members.invite({ partnerId, email: 'dup@acme.example', role: 'admin' }),
    ).rejects.toThrow(MemberExistsError);
    expect(await members.remove(partnerId, m.id)).toBe(true);
    const again = await members.invite({ partnerId, email: 'dup@acme.example', role: 'admin' });
    expect((await members.findActiveByEmail('DUP@acme.example'))?.id).toBe(again.id);
  });

  it('rolls a key in one transaction: a new key, and the old one ends after the overlap', async () => {
    const keys = createApiKeysRepo(t.db);
    const { record } = await keys.create(partnerId, 'live', 'Main');
    const rolled = await rollApiKey(t.db, record.id, '7d');
    expect(rolled?.record).toMatchObject({ name: 'Main', environment: 'live', revokedAt: null });
    expect(keyStatus(rolled!.old)).toBe('expiring');
    const days = (rolled!.old.revokedAt!.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(6.99);
    expect(days).toBeLessThan(7.01);
    expect(await rollApiKey(t.db, record.id, 'now')).toBeUndefined(); // only an active key rolls
    expect(await keys.revoke(record.id)).toBe(true); // an expiring key can still be revoked at once
    expect(keyStatus((await keys.get(record.id))!)).toBe('revoked');
  });

  it('ends database sessions after inactivity and all of a member’s sessions at once', async () => {
    const member = await createPortalMembersRepo(t.db).invite({
      partnerId,
      email: 'sess@acme.example',
      role: 'owner',
    });
    await exerciseStore(createDbSessionStore(t.db, 60_000), member.id, async (id) => {
      await t.db.query(
        `UPDATE portal_sessions SET last_seen_at = now() - interval '61 seconds' WHERE member_id = $1`,
        [member.id],
      );
      return id;
    });
  });
});

describe.skipIf(!testRedisUrl())('portal sessions in Redis', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(testRedisUrl()!, { keyPrefix: uniqueRedisPrefix() });
  });
  afterAll(async () => redis?.quit());

  it('ends Redis sessions after inactivity and all of a member’s sessions at once', async () => {
    await exerciseStore(createRedisSessionStore(redis, 400), 'mbr_redis', async (id) => {
      await new Promise((r) => setTimeout(r, 600));
      return id;
    });
  });
});

/** The contract every session store keeps. `idle(id)` makes that session idle past the limit. */
async function exerciseStore(
  store: SessionStore,
  memberId: string,
  idle: (id: string) => Promise<string>,
) {
  const a = await store.create(memberId, { ip: '127.0.0.1', userAgent: 'test' });
  const b = await store.create(memberId, {});
  const c = await store.create(memberId, {});
  expect(a).toMatch(/^[\w-]{43}$/);
  const resolved = await store.resolve(a);
  expect(resolved).toMatchObject({ memberId });
  // The database store reads the member in the same statement; the Redis store leaves it to the caller.
  if (resolved?.member) expect(resolved.member).toMatchObject({ id: memberId, removedAt: null });
  expect(await store.resolve('nope')).toBeUndefined();
  await store.destroy(a);
  expect(await store.resolve(a)).toBeUndefined();
  expect(await store.resolve(b)).toMatchObject({ memberId });
  expect(await store.destroyAllFor(memberId)).toBe(2);
  expect(await store.resolve(b)).toBeUndefined();
  expect(await store.resolve(c)).toBeUndefined();
  const d = await store.create(memberId, {});
  await idle(d);
  expect(await store.resolve(d)).toBeUndefined();
}
