/**
 * The session hook's cache (src/portal/signed-in-cache.ts) over the real database session store and
 * members repository (PGlite; PostgreSQL too when TEST_DATABASE_URL is set): a signed-in member is
 * looked up once per `ttlMs`, and every sign-out, sign-out everywhere and removal takes effect at the
 * very next lookup, including one that was in flight while it happened. The store is wrapped only
 * to count its lookups.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createPortalMembersRepo, type Member } from '../../src/db/portal-members.ts';
import { createDbSessionStore, type SessionStore } from '../../src/db/portal-sessions.ts';
import { createSignedInCache } from '../../src/portal/signed-in-cache.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

describe.each(storageEngines())('signed-in cache on %s', (engine) => {
  let t: TestDatabase;
  let partnerId: string;
  let n = 0;
  beforeAll(async () => {
    t = await freshDatabase(engine);
    partnerId = (await createPartnersRepo(t.db).create('Acme')).id;
  });
  afterAll(async () => t?.drop());

  /** A cache over the real store, counting the store's lookups; the clock is the test's. */
  function setUp(enabled = true) {
    const store = createDbSessionStore(t.db, 60 * 60_000);
    const members = createPortalMembersRepo(t.db);
    let lookups = 0;
    let clock = 1_000_000;
    let gate: Promise<void> | undefined;
    const counted: SessionStore = {
      ...store,
      async resolve(id) {
        lookups++;
        const answer = await store.resolve(id);
        await gate; // a test may hold a lookup here, after the store answered
        return answer;
      },
    };
    const cache = createSignedInCache(counted, members.get, {
      enabled,
      ttlMs: 30_000,
      now: () => clock,
    });
    return {
      cache,
      members,
      lookups: () => lookups,
      advance: (ms: number) => {
        clock += ms;
      },
      hold: () => {
        let release!: () => void;
        gate = new Promise((r) => {
          release = r;
        });
        return () => {
          gate = undefined;
          release();
        };
      },
    };
  }

  async function member(): Promise<Member> {
    return createPortalMembersRepo(t.db).invite({
      partnerId,
      email: `m${++n}@acme.example`,
      role: 'developer',
    });
  }

  it('looks a session up once per ttl, and again after it', async () => {
    const s = setUp();
    const m = await member();
    const id = await s.cache.sessions.create(m.id, {});
    expect((await s.cache.resolve(id))?.id).toBe(m.id);
    expect((await s.cache.resolve(id))?.email).toBe(m.email);
    expect(s.lookups()).toBe(1);
    s.advance(30_001);
    expect((await s.cache.resolve(id))?.id).toBe(m.id);
    expect(s.lookups()).toBe(2);
  });

  it('ends a session at once on sign-out, and every session on sign-out everywhere', async () => {
    const s = setUp();
    const m = await member();
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => s.cache.sessions.create(m.id, {})));
    for (const id of [a!, b!, c!]) expect((await s.cache.resolve(id))?.id).toBe(m.id);
    await s.cache.sessions.destroy(a!);
    expect(await s.cache.resolve(a!)).toBeUndefined();
    expect((await s.cache.resolve(b!))?.id).toBe(m.id);
    expect(await s.cache.sessions.destroyAllFor(m.id)).toBe(2);
    expect(await s.cache.resolve(b!)).toBeUndefined();
    expect(await s.cache.resolve(c!)).toBeUndefined();
  });

  it('ends a removed member’s sessions at once', async () => {
    const s = setUp();
    const m = await member();
    const id = await s.cache.sessions.create(m.id, {});
    expect((await s.cache.resolve(id))?.id).toBe(m.id);
    // Removal alone (its sessions still in the store) already refuses the member.
    await s.cache.changingMember(m.id, () => s.members.remove(partnerId, m.id));
    expect(await s.cache.resolve(id)).toBeUndefined();
  });

  it('does not cache a lookup that overlapped a sign-out everywhere', async () => {
    const s = setUp();
    const m = await member();
    const id = await s.cache.sessions.create(m.id, {});
    const release = s.hold();
    // The store answers "signed in" before the sign-out; the answer arrives after it.
    const inFlight = s.cache.resolve(id);
    await expect.poll(() => s.lookups(), { timeout: 10_000 }).toBe(1);
    await s.cache.sessions.destroyAllFor(m.id);
    release();
    expect((await inFlight)?.id).toBe(m.id);
    expect(await s.cache.resolve(id)).toBeUndefined();
    expect(s.lookups()).toBe(2);
  });

  it('asks the store every time when disabled (sessions shared by several processes)', async () => {
    const s = setUp(false);
    const m = await member();
    const id = await s.cache.sessions.create(m.id, {});
    await s.cache.resolve(id);
    await s.cache.resolve(id);
    expect(s.lookups()).toBe(2);
  });
});
