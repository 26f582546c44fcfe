/** Repository of portal team members: invite, find, list, change, remove. */
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';

export const MEMBER_ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

export function isMemberRole(raw: unknown): raw is MemberRole {
  return typeof raw === 'string' && (MEMBER_ROLES as readonly string[]).includes(raw);
}

export interface Member {
  id: string;
  partnerId: string;
  partnerName: string;
  email: string;
  role: MemberRole;
  invitedBy: string | null;
  createdAt: Date;
  removedAt: Date | null;
  /** The first sign-in: the invitation accepted (null: not yet). */
  acceptedAt: Date | null;
  /** Until when an invitation not yet accepted lets its member sign in. */
  inviteExpiresAt: Date | null;
}

/** How long an invitation lets its member sign in for the first time (resending renews it). */
export const INVITATION_TTL_MS = 7 * 86_400_000;

export type InvitationState = 'active' | 'invited' | 'expired';

export function invitationState(m: Member, now = Date.now()): InvitationState {
  if (m.acceptedAt) return 'active';
  return m.inviteExpiresAt && m.inviteExpiresAt.getTime() > now ? 'invited' : 'expired';
}

/** SQL: the member `m` may sign in (accepted, or invited and not expired). */
export const MAY_SIGN_IN = '(m.accepted_at IS NOT NULL OR m.invite_expires_at > now())';

export interface MemberRow {
  id: string;
  partner_id: string;
  partner_name: string;
  email: string;
  role: MemberRole;
  invited_by: string | null;
  created_at: Date;
  removed_at: Date | null;
  accepted_at: Date | null;
  invite_expires_at: Date | null;
}

export const toMember = (r: MemberRow): Member => ({
  id: r.id,
  partnerId: r.partner_id,
  partnerName: r.partner_name,
  email: r.email,
  role: r.role,
  invitedBy: r.invited_by,
  createdAt: r.created_at,
  removedAt: r.removed_at,
  acceptedAt: r.accepted_at,
  inviteExpiresAt: r.invite_expires_at,
});

/** A member's columns: `m` is portal_members, `p` its partner. */
export const MEMBER_COLUMNS = 'm.*, p.name AS partner_name';
const SELECT = `SELECT ${MEMBER_COLUMNS} FROM portal_members m JOIN partners p ON p.id = m.partner_id`;

/** Emails are kept as given (trimmed) and compared case-insensitively. */
export const EMAIL_PATTERN = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/;
export function normaliseEmail(raw: string): string | undefined {
  const email = raw.trim();
  return email.length <= 254 && EMAIL_PATTERN.test(email) ? email : undefined;
}

export class MemberExistsError extends BaseError<'member_exists'> {
  override name = 'MemberExistsError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('member_exists', message, options);
  }
}

export function createPortalMembersRepo(db: Queryable) {
  return {
    /** Adds a member; throws MemberExistsError when the email already belongs to an active member. */
    async invite(input: {
      partnerId: string;
      email: string;
      role: MemberRole;
      invitedBy?: string | null;
    }): Promise<Member> {
      const id = newId('mbr');
      try {
        await db.query(
          `INSERT INTO portal_members (id, partner_id, email, role, invited_by, invite_expires_at)
           VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
          [
            id,
            input.partnerId,
            input.email,
            input.role,
            input.invitedBy ?? null,
            INVITATION_TTL_MS,
          ],
        );
      } catch (err) {
        if ((err as { code?: string }).code === '23505') {
          throw new MemberExistsError(`${input.email} is already a member`);
        }
        throw err;
      }
      return (await this.get(id))!;
    },

    async get(id: string): Promise<Member | undefined> {
      const { rows } = await db.query<MemberRow>(`${SELECT} WHERE m.id = $1`, [id]);
      return rows[0] && toMember(rows[0]);
    },

    /** The active member with this email, any partner. */
    async findActiveByEmail(email: string): Promise<Member | undefined> {
      const { rows } = await db.query<MemberRow>(
        `${SELECT} WHERE lower(m.email) = lower($1) AND m.removed_at IS NULL`,
        [email.trim()],
      );
      return rows[0] && toMember(rows[0]);
    },

    async listActive(partnerId: string): Promise<Member[]> {
      const { rows } = await db.query<MemberRow>(
        `${SELECT} WHERE m.partner_id = $1 AND m.removed_at IS NULL ORDER BY m.created_at, m.id`,
        [partnerId],
      );
      return rows.map(toMember);
    },

    /** Marks a member removed; false when not an active member of that partner. */
    async remove(partnerId: string, id: string): Promise<boolean> {
      const r = await db.query(
        `UPDATE portal_members SET removed_at = now()
         WHERE id = $1 AND partner_id = $2 AND removed_at IS NULL`,
        [id, partnerId],
      );
      return r.rowCount === 1;
    },

    /** The first sign-in: marks the invitation accepted (once). */
    async accept(id: string): Promise<void> {
      await db.query(
        'UPDATE portal_members SET accepted_at = now() WHERE id = $1 AND accepted_at IS NULL',
        [id],
      );
    },

    /** A new period for an invitation not yet accepted; false when there is none to renew. */
    async renewInvitation(partnerId: string, id: string): Promise<boolean> {
      const r = await db.query(
        `UPDATE portal_members SET invite_expires_at = now() + $3 * interval '1 millisecond'
         WHERE id = $1 AND partner_id = $2 AND removed_at IS NULL AND accepted_at IS NULL`,
        [id, partnerId, INVITATION_TTL_MS],
      );
      return r.rowCount === 1;
    },

    async countOwners(partnerId: string): Promise<number> {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM portal_members
         WHERE partner_id = $1 AND role = 'owner' AND removed_at IS NULL`,
        [partnerId],
      );
      return rows[0]!.n;
    },
  };
}

export type PortalMembersRepo = ReturnType<typeof createPortalMembersRepo>;
