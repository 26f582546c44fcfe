/**
 * One-time sign-in links. The token is 32 random bytes (base64url) that exists in clear only in the
 * link; the table keeps its SHA-256. A token is used at most once, within its lifetime: `consume`
 * marks it used in the same statement that checks it, so two concurrent uses cannot both win.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from './client.ts';
import { MAY_SIGN_IN } from './portal-members.ts';

export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** Why a link does not work; `team` names the member's team when the words need it. */
export interface LinkRefusal {
  reason:
    | 'unknown'
    | 'used'
    | 'expired'
    | 'invitation_expired'
    /** The member was removed before ever signing in: the invitation was cancelled. */
    | 'invitation_cancelled'
    /** The member was removed after signing in. */
    | 'removed';
  team?: string | undefined;
}

export type ConsumeResult = { ok: true; memberId: string } | ({ ok: false } & LinkRefusal);

export function createSignInTokensRepo(db: Queryable) {
  return {
    async issue(memberId: string, ttlMs = SIGN_IN_LINK_TTL_MS): Promise<string> {
      const token = randomBytes(32).toString('base64url');
      await db.query(
        `INSERT INTO portal_sign_in_tokens (token_hash, member_id, expires_at)
         VALUES ($1, $2, now() + $3 * interval '1 millisecond')`,
        [hashToken(token), memberId, ttlMs],
      );
      return token;
    },

    /** Uses a token; only an unused, unexpired token of an active member succeeds. */
    async consume(token: string): Promise<ConsumeResult> {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { ok: false, reason: 'unknown' };
      const hash = hashToken(token);
      const { rows } = await db.query<{ member_id: string }>(
        `UPDATE portal_sign_in_tokens t SET used_at = now()
         FROM portal_members m
         WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > now()
           AND m.id = t.member_id AND m.removed_at IS NULL AND ${MAY_SIGN_IN}
         RETURNING t.member_id`,
        [hash],
      );
      if (rows[0]) return { ok: true, memberId: rows[0].member_id };
      return { ok: false, ...(await this.refusal(token)) };
    },

    /** Why a token that is not usable is refused (for the words of the page that says so). */
    async refusal(token: string): Promise<LinkRefusal> {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return { reason: 'unknown' };
      const hash = hashToken(token);
      const { rows: seen } = await db.query<{
        used_at: Date | null;
        may_sign_in: boolean | null;
        removed_at: Date | null;
        accepted_at: Date | null;
        team: string | null;
      }>(
        `SELECT t.used_at, ${MAY_SIGN_IN} AS may_sign_in, m.removed_at, m.accepted_at,
                p.name AS team
         FROM portal_sign_in_tokens t LEFT JOIN portal_members m ON m.id = t.member_id
           LEFT JOIN partners p ON p.id = m.partner_id
         WHERE t.token_hash = $1`,
        [hash],
      );
      const row = seen[0];
      if (!row) return { reason: 'unknown' };
      if (row.used_at) return { reason: 'used' };
      const team = row.team ?? undefined;
      if (row.removed_at) {
        return { reason: row.accepted_at ? 'removed' : 'invitation_cancelled', team };
      }
      return { reason: row.may_sign_in === false ? 'invitation_expired' : 'expired', team };
    },

    /** Whether a token would be accepted now (the confirmation page asks before consuming it). */
    async isUsable(token: string): Promise<boolean> {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
      const { rows } = await db.query(
        `SELECT 1 FROM portal_sign_in_tokens t JOIN portal_members m ON m.id = t.member_id
         WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > now()
           AND m.removed_at IS NULL AND ${MAY_SIGN_IN}`,
        [hashToken(token)],
      );
      return rows.length === 1;
    },
  };
}

export type SignInTokensRepo = ReturnType<typeof createSignInTokensRepo>;
