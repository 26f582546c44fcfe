/**
 * One-time sign-in links and invitations: the one code path for the operator's CLI (`portal
 * invite`), the team page's invitations and the sign-in form. A link is `…/portal/sign-in/link?token=…`,
 * single use, valid 15 minutes; it opens a confirmation page whose button uses it, so a mail
 * scanner that fetches links cannot spend it.
 */
import type { Database } from '../db/client.ts';
import type { Member, MemberRole } from '../db/portal-members.ts';
import { createSignInTokensRepo, SIGN_IN_LINK_TTL_MS } from '../db/portal-sign-in-tokens.ts';
import { OPERATOR } from '../operations/actor.ts';
import { inviteMember as inviteAs } from '../operations/team.ts';
import type { Mailer } from './mailer.ts';
import { returnQuery } from './return-path.ts';

/** `returnTo`: a path checked by return-path.ts, where the sign-in lands (the link page checks it again). */
export function signInUrl(publicUrl: string, token: string, returnTo?: string): string {
  return `${publicUrl}/sign-in/link?token=${token}${returnQuery(returnTo, '&')}`;
}

export async function issueSignInUrl(
  db: Database,
  publicUrl: string,
  memberId: string,
  returnTo?: string,
) {
  const token = await createSignInTokensRepo(db).issue(memberId);
  return signInUrl(publicUrl, token, returnTo);
}

/**
 * Adds a member to a partner's team as the operator (the CLI's `portal invite`, the demo's first
 * owner): operations/team.ts, audited by "operator". Throws MemberExistsError when the email is
 * already an active member's.
 */
export function inviteMember(
  db: Database,
  input: { partnerId: string; email: string; role: MemberRole },
): Promise<Member> {
  return inviteAs(db, OPERATOR, input);
}

/**
 * Mails a member a fresh sign-in link (an invitation names who invited them; `returnTo`, a checked
 * return path, is where the link's sign-in lands).
 */
export async function mailSignInLink(
  db: Database,
  mailer: Mailer,
  publicUrl: string,
  member: Member,
  options: { invitedBy?: Member | undefined; returnTo?: string | undefined } = {},
): Promise<void> {
  const { invitedBy, returnTo } = options;
  const url = await issueSignInUrl(db, publicUrl, member.id, returnTo);
  const minutes = SIGN_IN_LINK_TTL_MS / 60_000;
  const intro = invitedBy
    ? `${invitedBy.email} invited you to ${member.partnerName}'s team on the partner portal, as ${member.role}.`
    : `Here is your link to sign in to ${member.partnerName}'s partner portal.`;
  await mailer.send({
    to: member.email,
    subject: invitedBy
      ? `You are invited to ${member.partnerName} on the partner portal`
      : 'Your sign-in link for the partner portal',
    text: [
      intro,
      '',
      `Sign in (the link works once, for ${minutes} minutes):`,
      url,
      '',
      invitedBy
        ? `If you did not expect an invitation to ${member.partnerName}, ignore this message: nobody can sign in without the link.`
        : 'If you did not ask for this, ignore this message: nobody can sign in without the link.',
    ].join('\n'),
  });
}
