/**
 * A partner's portal team: invite a member, remove one. The change and its audit row in one
 * transaction; the portal's team page and `portal invite` call these. Who may invite or remove
 * whom (roles.ts) is the face's check before it calls.
 */
import type { Database } from '../db/client.ts';
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
