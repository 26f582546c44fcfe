/**
 * Portal sessions in Redis (when REDIS_URL is set): every API process sees the same sessions, and
 * Redis expires idle ones by itself. A session is `pys:portal:s:<sha256 of id>` → member id with a
 * TTL of the inactivity limit, renewed on use; `pys:portal:m:<member>` lists a member's sessions so
 * that sign-out everywhere and removal can end them all.
 */

import {
  hashSessionId,
  newSessionId,
  SESSION_ID_PATTERN,
  type SessionStore,
} from '../db/portal-sessions.ts';
import type { Redis } from '../redis.ts';

const sessionKey = (hash: string) => `pys:portal:s:${hash}`;
const memberKey = (memberId: string) => `pys:portal:m:${memberId}`;

export function createRedisSessionStore(redis: Redis, idleMs: number): SessionStore {
  return {
    async create(memberId) {
      const id = newSessionId();
      const hash = hashSessionId(id).toString('hex');
      await redis
        .multi()
        .set(sessionKey(hash), memberId, 'PX', idleMs)
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
      await redis.del(sessionKey(hash));
      if (memberId) await redis.srem(memberKey(memberId), hash);
    },

    async destroyAllFor(memberId) {
      const hashes = await redis.smembers(memberKey(memberId));
      if (hashes.length === 0) return 0;
      const ended = await redis.del(...hashes.map(sessionKey));
      await redis.del(memberKey(memberId));
      return ended;
    },
  };
}
