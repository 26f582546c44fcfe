/**
 * Portal sessions kept in the database (the store when no Redis is configured). The cookie carries a
 * random 32-byte id; only its SHA-256 is stored, so a database reader cannot ride a session. A
 * session ends after `idleMs` without a request, at sign-out, or when its member is removed.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from './client.ts';
import { MEMBER_COLUMNS, type Member, type MemberRow, toMember } from './portal-members.ts';

export interface SessionMeta {
  ip?: string | undefined;
  userAgent?: string | undefined;
}

export interface SessionStore {
  /** Starts a session; returns the id for the cookie (never stored in clear). */
  create(memberId: string, meta: SessionMeta): Promise<string>;
  /**
   * The member of a live session, renewing its inactivity clock; undefined when none. A store that
   * can read the member in the same round trip (the database) returns it too.
   */
  resolve(sessionId: string): Promise<{ memberId: string; member?: Member } | undefined>;
  destroy(sessionId: string): Promise<void>;
  /** Ends every session of a member (sign-out everywhere, removal). Returns how many ended. */
  destroyAllFor(memberId: string): Promise<number>;
  /**
   * Whether the session began (its member signed in) within REAUTH_WINDOW_MS: what a change that
   * needs a fresh sign-in asks (removing a passkey), as GitHub's "sudo mode" does.
   */
  signedInRecently(sessionId: string): Promise<boolean>;
  close?(): Promise<void>;
}

/** How long after signing in a member may make a change that needs a fresh sign-in. */
export const REAUTH_WINDOW_MS = 10 * 60_000;

export const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;
export const newSessionId = () => randomBytes(32).toString('base64url');
export const hashSessionId = (id: string) => createHash('sha256').update(id, 'utf8').digest();

/** Renewing the inactivity clock is a write; at most one a minute per session is enough. */
const RENEW_AFTER_MS = 60_000;

export function createDbSessionStore(db: Queryable, idleMs: number): SessionStore {
  return {
    async create(memberId, meta) {
      const id = newSessionId();
      await db.query(
        `INSERT INTO portal_sessions (id_hash, member_id, ip, user_agent) VALUES ($1, $2, $3, $4)`,
        [hashSessionId(id), memberId, meta.ip ?? null, meta.userAgent?.slice(0, 300) ?? null],
      );
      return id;
    },

    async resolve(sessionId) {
      if (!SESSION_ID_PATTERN.test(sessionId)) return undefined;
      const hash = hashSessionId(sessionId);
      // The member in the same statement: every signed-in page asks this first.
      const { rows } = await db.query<MemberRow & { idle_ms: number }>(
        `SELECT ${MEMBER_COLUMNS},
                (extract(epoch FROM now() - s.last_seen_at) * 1000)::float8 AS idle_ms
         FROM portal_sessions s
         JOIN portal_members m ON m.id = s.member_id JOIN partners p ON p.id = m.partner_id
         WHERE s.id_hash = $1`,
        [hash],
      );
      const row = rows[0];
      if (!row) return undefined;
      if (row.idle_ms >= idleMs) {
        await db.query('DELETE FROM portal_sessions WHERE id_hash = $1', [hash]);
        return undefined;
      }
      if (row.idle_ms >= RENEW_AFTER_MS) {
        await db.query('UPDATE portal_sessions SET last_seen_at = now() WHERE id_hash = $1', [
          hash,
        ]);
      }
      const { idle_ms: _, ...member } = row;
      return { memberId: row.id, member: toMember(member) };
    },

    async destroy(sessionId) {
      if (!SESSION_ID_PATTERN.test(sessionId)) return;
      await db.query('DELETE FROM portal_sessions WHERE id_hash = $1', [hashSessionId(sessionId)]);
    },

    async destroyAllFor(memberId) {
      const r = await db.query('DELETE FROM portal_sessions WHERE member_id = $1', [memberId]);
      return r.rowCount;
    },

    async signedInRecently(sessionId) {
      if (!SESSION_ID_PATTERN.test(sessionId)) return false;
      const { rows } = await db.query<{ fresh: boolean }>(
        `SELECT created_at > now() - $2 * interval '1 millisecond' AS fresh
         FROM portal_sessions WHERE id_hash = $1`,
        [hashSessionId(sessionId), REAUTH_WINDOW_MS],
      );
      return rows[0]?.fresh === true;
    },
  };
}
