/**
 * Who is signed in, without two database round trips on every page: the session hook's answer
 * (session id → its active member) kept in this process for a short while.
 *
 * Correctness rests on every change that ends a session or a membership passing through this
 * process's portal, which evicts the entries it affects before it answers:
 * - sign-out (`destroy`), sign-in rotation (`destroy` of the previous id), sign-out everywhere and
 *   member removal (`destroyAllFor`, which removal also calls) all go through the wrapped store;
 * - an entry lives at most `ttlMs` (below the store's one-a-minute renewal), so the inactivity
 *   clock keeps being renewed in the store and an idle session still ends on time.
 * That premise holds where sessions live in an embedded PGlite database, which one process owns
 * (db/pglite-lock.ts). With PostgreSQL or Redis several API processes may share the sessions and a
 * sign-out in one would not evict the others' entries, so there the plugin does not cache
 * (plugin.ts): every request asks the store, as before.
 */
import { LRUCache } from 'lru-cache';
import type { Member } from '../db/portal-members.ts';
import type { SessionStore } from '../db/portal-sessions.ts';

export interface SignedInCache {
  /** The session's active member, from the cache or the store; undefined when signed out. */
  resolve(sessionId: string): Promise<Member | undefined>;
  /** The store, wrapped so that ending sessions evicts them from the cache first. */
  readonly sessions: SessionStore;
  /** Runs a change to a member (removal) with their entries evicted before and after it. */
  changingMember<T>(memberId: string, change: () => Promise<T>): Promise<T>;
}

export function createSignedInCache(
  store: SessionStore,
  getMember: (memberId: string) => Promise<Member | undefined>,
  options: { enabled: boolean; ttlMs?: number; maxEntries?: number; now?: () => number },
): SignedInCache {
  const ttlMs = options.ttlMs ?? 30_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? Date.now;
  // Past maxEntries the least recently used make room (lru-cache). Expiry is checked here, as in
  // change-cache.ts: lru-cache's ttl keeps an entry at exactly its limit and ignores a start of 0.
  const entries = new LRUCache<string, { member: Member; until: number }>({ max: maxEntries });
  /** Bumped by every eviction: a lookup that overlapped one does not store its answer. */
  let generation = 0;

  const lookUp = async (sessionId: string) => {
    const session = await store.resolve(sessionId);
    const member = session ? (session.member ?? (await getMember(session.memberId))) : undefined;
    return member && !member.removedAt ? member : undefined;
  };

  /**
   * Evicts, ends in the store, and evicts again: a lookup that ran while the store was ending the
   * session (and may have read it still alive) sees the generation move and does not cache it.
   */
  async function evicting<T>(evict: () => void, end: () => Promise<T>): Promise<T> {
    generation++;
    evict();
    try {
      return await end();
    } finally {
      generation++;
      evict();
    }
  }

  const forgetMember = (memberId: string) => {
    const ids = [...entries.entries()].filter(([, e]) => e.member.id === memberId);
    for (const [id] of ids) entries.delete(id);
  };

  return {
    async resolve(sessionId) {
      if (!options.enabled) return lookUp(sessionId);
      const hit = entries.get(sessionId);
      if (hit && hit.until > now()) return hit.member;
      entries.delete(sessionId);
      const started = generation;
      const member = await lookUp(sessionId);
      // A sign-out or removal that ran while the store answered must not be undone by caching
      // what the store said before it.
      if (member && started === generation) {
        entries.set(sessionId, { member, until: now() + ttlMs });
      }
      return member;
    },
    changingMember: (memberId, change) => evicting(() => forgetMember(memberId), change),
    sessions: {
      create: (memberId, meta) => store.create(memberId, meta),
      resolve: (sessionId) => store.resolve(sessionId),
      signedInRecently: (sessionId) => store.signedInRecently(sessionId),
      destroy: (sessionId) =>
        evicting(
          () => entries.delete(sessionId),
          () => store.destroy(sessionId),
        ),
      destroyAllFor: (memberId) =>
        evicting(
          () => forgetMember(memberId),
          () => store.destroyAllFor(memberId),
        ),
      ...(store.close ? { close: () => store.close!() } : {}),
    },
  };
}
