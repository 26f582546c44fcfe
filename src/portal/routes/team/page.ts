/**
 * The team page: every member sees who is on it and the invitations not yet accepted; owners and
 * admins invite by email (the invitee gets a one-time sign-in link; the invitation lasts 7 days).
 * Only owners invite owners.
 */
import type { FastifyPluginAsync } from 'fastify';
import {
  isMemberRole,
  type Member,
  MemberExistsError,
  normaliseEmail,
} from '../../../db/portal-members.ts';
import { inviteMember } from '../../../operations/team.ts';
import { actorOf, type PortalContext, seeOther, sendPage, signedIn } from '../../context.ts';
import { canManageRole } from '../../roles.ts';
import { mailSignInLink } from '../../sign-in-links.ts';
import { refuseRole, teamPage } from './shared.ts';

const NOTICES: Record<string, (who: string) => string> = {
  invited: (who) => `Invitation sent to ${who}.`,
  resent: (who) => `Invitation sent again to ${who}; it lasts another 7 days.`,
  cancelled: (who) => `The invitation of ${who} is cancelled.`,
  removed: (who) => `${who} was removed and signed out.`,
};

export function teamPageRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;

    app.get<{ Params: { env: string }; Querystring: Record<string, string | undefined> }>(
      '/:env/team',
      { config: { requires: 'team.view' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const kind = Object.keys(NOTICES).find((k) => typeof request.query[k] === 'string');
        const notice = kind ? NOTICES[kind]!(request.query[kind]!.slice(0, 254)) : undefined;
        return sendPage(reply, await teamPage(ctx, member, env, reply.generateCsrf(), { notice }));
      },
    );

    app.post<{ Params: { env: string }; Body: { email?: unknown; role?: unknown } }>(
      '/:env/team',
      { config: { requires: 'team.manage' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const given = typeof request.body?.email === 'string' ? request.body.email : '';
        const role = request.body?.role;
        const email = normaliseEmail(given);
        const again = (errors: string[]) =>
          teamPage(ctx, member, env, reply.generateCsrf(), {
            errors,
            email: given.slice(0, 254),
            role: typeof role === 'string' ? role : undefined,
          }).then((p) => sendPage(reply, p, 400));
        if (!email) return again(['Enter the email address of the person to invite.']);
        if (!isMemberRole(role)) return again(['Choose a role for the new member.']);
        if (!canManageRole(member.role, role)) throw refuseRole(member, `invite an ${role}`);
        let invited: Member;
        try {
          invited = await inviteMember(ctx.db, actorOf(request), {
            partnerId: member.partnerId,
            email,
            role,
          });
        } catch (err) {
          if (err instanceof MemberExistsError) {
            // Says what to do; whose the address is, only when it is this team's.
            const existing = await ctx.members.findActiveByEmail(email);
            if (existing?.partnerId === member.partnerId) {
              return again([
                existing.acceptedAt
                  ? `${email} is already a member of your team (${existing.role}).`
                  : `${email} is already invited to your team. To send them a new link, use Resend on their row below.`,
              ]);
            }
            return again([
              `${email} cannot be invited. Invite them with another address, or contact support if you think this is wrong.`,
            ]);
          }
          throw err;
        }
        await mailSignInLink(ctx.db, ctx.mailer, ctx.publicUrl(), invited, { invitedBy: member });
        return seeOther(reply, `${base()}/${env}/team?invited=${encodeURIComponent(email)}`);
      },
    );
  };
}
