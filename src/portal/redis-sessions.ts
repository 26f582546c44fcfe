/**
 * Portal sessions in Redis (when REDIS_URL is set): every API process sees the same sessions, and
 * Redis expires idle ones by itself. A session is `pys:portal:s:<sha256 of id>` → member id with a
 * TTL of the inactivity limit, renewed on use; `pys:portal:m:<member>` lists a member's sessions so
 * that sign-out everywhere and removal can end them all.
 */

import {
  hashSessionId,
  newSessionId,
  REAUTH_WINDOW_MS,
  SESSION_ID_PATTERN,
  type SessionStore,
} from '../db/portal-sessions.ts';
import type { Redis } from '../redis.ts';

const sessionKey = (hash: string) => `pys:portal:s:${hash}`;
const memberKey = (memberId: string) => `pys:portal:m:${memberId}`;
/** Exists for REAUTH_WINDOW_MS after the session began: a fresh sign-in. */
const freshKey = (hash: string) => `pys:portal:f:${hash}`;

export function createRedisSessionStore(redis: Redis, idleMs: number): SessionStore {
  return {
    async create(memberId) {
      const id = newSessionId();
      const hash = hashSessionId(id).toString('hex');
      await redis
        .multi()
        .set(sessionKey(hash), memberId, 'PX', idleMs)
        .set(freshKey(hash), '1', 'PX', REAUTH_WINDOW_MS)
        .sadd(memberKey(memberId), hash)
        .exec();
      return id;
    },

    async resolve(sessionId) {
      if (!SESSION_ID_PATTERN.test(sessionId)) return undefined;
      const key = sessionKey(hashSessionId(sessionId).toString('hex'));
      const [[, memberId]] = (await redis.multi().get(key).pexpire(key, idleMs).exec()) as [
        [Error | null, string | null],
        unknown,
      ];
      return memberId ? { memberId } : undefined;
    },

    async destroy(sessionId) {
      if (!SESSION_ID_PATTERN.test(sessionId)) return;
      const hash = hashSessionId(sessionId).toString('hex');
      const memberId = await redis.get(sessionKey(hash));
      await redis.del(sessionKey(hash), freshKey(hash));
      if (memberId) await redis.srem(memberKey(memberId), hash);
    },

    async signedInRecently(sessionId) {
      if (!SESSION_ID_PATTERN.test(sessionId)) return false;
      const hash = hashSessionId(sessionId).toString('hex');
      // Both: a session ended meanwhile is not fresh, whatever its marker says.
      const [[, alive], [, fresh]] = (await redis
        .multi()
        .exists(sessionKey(hash))
        .exists(freshKey(hash))
        .exec()) as [[Error | null, number], [Error | null, number]];
      return alive === 1 && fresh === 1;
    },

    async destroyAllFor(memberId) {
      const hashes = await redis.smembers(memberKey(memberId));
      if (hashes.length === 0) return 0;
      const ended = await redis.del(...hashes.map(sessionKey));
      await redis.del(...hashes.map(freshKey));
      await redis.del(memberKey(memberId));
      return ended;
    },
  };
}
