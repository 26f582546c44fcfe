/**
 * A partner's portal team: invite a member (the invitation lasts 7 days until the first sign-in),
 * resend or cancel an invitation not yet accepted, remove a member. The change and its audit row in one
 * transaction; the portal's team page and `portal invite` call these. Who may invite or remove
 * whom (roles.ts) is the face's check before it calls.
 */
import type { Database, Queryable } from '../db/client.ts';
import { createPortalMembersRepo, type Member, type MemberRole } from '../db/portal-members.ts';
import { BaseError } from '../errors.ts';
import { type Actor, authorOf, recordChange } from './actor.ts';

/** Removing the last owner would leave a team nobody can fully manage. */
export class LastOwnerError extends BaseError<'last_owner'> {
  override name = 'LastOwnerError';
  constructor() {
    super('last_owner', 'a team keeps at least one owner');
  }
}

/** Throws MemberExistsError when the email is already an active member's. */
export function inviteMember(
  db: Database,
  actor: Actor,
  input: { partnerId: string; email: string; role: MemberRole },
): Promise<Member> {
  return db.transaction(async (tx) => {
    const member = await createPortalMembersRepo(tx).invite({
      partnerId: input.partnerId,
      email: input.email,
      role: input.role,
      invitedBy: authorOf(actor),
    });
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'member.invited',
      target: `${member.email} (${member.role})`,
    });
    return member;
  });
}

/** Neither resend nor cancel applies to a member who has signed in already. */
export class InvitationAcceptedError extends BaseError<'invitation_accepted'> {
  override name = 'InvitationAcceptedError';
  constructor() {
    super('invitation_accepted', 'the invitation was accepted: the member has signed in');
  }
}

async function pendingInvitee(tx: Queryable, partnerId: string, id: string) {
  const member = await createPortalMembersRepo(tx).get(id);
  if (!member || member.partnerId !== partnerId || member.removedAt) return undefined;
  if (member.acceptedAt) throw new InvitationAcceptedError();
  return member;
}

/**
 * Renews an invitation not yet accepted (invited or expired) for another 7 days; the face then
 * mails a new sign-in link. Undefined when `id` is no member of the partner.
 */
export function resendInvitation(
  db: Database,
  actor: Actor,
  input: { partnerId: string; id: string },
): Promise<Member | undefined> {
  return db.transaction(async (tx) => {
    const member = await pendingInvitee(tx, input.partnerId, input.id);
    if (!member) return undefined;
    await createPortalMembersRepo(tx).renewInvitation(input.partnerId, input.id);
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'member.invite_resent',
      target: `${member.email} (${member.role})`,
    });
    return (await createPortalMembersRepo(tx).get(input.id))!;
  });
}

/** Withdraws an invitation not yet accepted: the invitee can no longer sign in. */
export function cancelInvitation(
  db: Database,
  actor: Actor,
  input: { partnerId: string; id: string },
): Promise<Member | undefined> {
  return db.transaction(async (tx) => {
    const member = await pendingInvitee(tx, input.partnerId, input.id);
    if (!member) return undefined;
    await createPortalMembersRepo(tx).remove(input.partnerId, input.id);
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'member.invite_cancelled',
      target: `${member.email} (${member.role})`,
    });
    return member;
  });
}

/** The removed member, or undefined when `id` is no active member of the partner. */
export function removeMember(
  db: Database,
  actor: Actor,
  input: { partnerId: string; id: string },
): Promise<Member | undefined> {
  return db.transaction(async (tx) => {
    const members = createPortalMembersRepo(tx);
    const member = await members.get(input.id);
    if (!member || member.partnerId !== input.partnerId || member.removedAt) return undefined;
    if (member.role === 'owner' && (await members.countOwners(input.partnerId)) <= 1) {
      throw new LastOwnerError();
    }
    await members.remove(input.partnerId, input.id);
    await recordChange(tx, actor, {
      partnerId: input.partnerId,
      action: 'member.removed',
      target: `${member.email} (${member.role})`,
    });
    return member;
  });
}
