/**
 * Changes to one member of the team: removing a member (their sessions end at once), and, for an
 * invitation not yet accepted, resending it (another 7 days, a new link) or cancelling it. Only
 * owners act on owners, nobody removes themselves, and the last owner stays.
 */
import type { FastifyPluginAsync } from 'fastify';
import {
  cancelInvitation,
  InvitationAcceptedError,
  LastOwnerError,
  removeMember,
  resendInvitation,
} from '../../../operations/team.ts';
import { confirmView } from '../../confirm.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  signedIn,
} from '../../context.ts';
import { html } from '../../html.ts';
import { page } from '../../layout.ts';
import { canManageRole } from '../../roles.ts';
import { mailSignInLink } from '../../sign-in-links.ts';
import { ownMember, refuseRole } from './shared.ts';

const accepted = () =>
  new PortalError(
    409,
    'Already a member',
    'They have signed in: the invitation was accepted. Remove the member instead.',
  );

export function teamChangeRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const manage = { config: { requires: 'team.manage' as const } };
    const teamOf = (env: string) => `${base()}/${env}/team`;

    /** The other member, if the signed-in one may act on them. */
    async function actOn(request: Parameters<typeof signedIn>[0], id: string, what: string) {
      const { member, env } = signedIn(request);
      const other = await ownMember(ctx, member, id);
      if (other.id === member.id) {
        throw new PortalError(
          400,
          'Not possible',
          `You cannot ${what} yourself; ask another owner or admin.`,
        );
      }
      if (!canManageRole(member.role, other.role))
        throw refuseRole(member, `${what} an ${other.role}`);
      return { member, env, other };
    }

    for (const kind of ['remove', 'cancel'] as const) {
      app.get<{ Params: { env: string; id: string } }>(
        `/:env/team/:id/${kind}`,
        manage,
        async (request, reply) => {
          const { member, env, other } = await actOn(request, request.params.id, kind);
          const csrf = reply.generateCsrf();
          const body = confirmView({
            action: `${teamOf(env)}/${other.id}/${kind}`,
            csrf,
            question:
              kind === 'remove'
                ? html`<p>Remove <strong>${other.email}</strong> (${other.role}) from the team? They are signed out everywhere at once and can no longer sign in. Keys they created keep working.</p>`
                : html`<p>Cancel the invitation of <strong>${other.email}</strong> (${other.role})? Their sign-in links stop working. You can invite them again later.</p>`,
            button: kind === 'remove' ? 'Remove member' : 'Cancel invitation',
            danger: true,
            cancel: teamOf(env),
            cancelLabel: kind === 'cancel' ? 'Keep invitation' : undefined,
          });
          return sendPage(
            reply,
            page({
              title: kind === 'remove' ? 'Remove a member' : 'Cancel an invitation',
              base: base(),
              csrf,
              member,
              env,
              section: 'team',
              body,
            }),
          );
        },
      );
    }

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/team/:id/remove',
      manage,
      async (request, reply) => {
        const { member, env, other } = await actOn(request, request.params.id, 'remove');
        try {
          // Around the change, the signed-in cache forgets the member (signed-in-cache.ts).
          await ctx.changingMember(other.id, () =>
            removeMember(ctx.db, actorOf(request), { partnerId: member.partnerId, id: other.id }),
          );
        } catch (err) {
          if (err instanceof LastOwnerError) {
            throw new PortalError(409, 'Not possible', 'A team keeps at least one owner.');
          }
          throw err;
        }
        await ctx.sessions.destroyAllFor(other.id);
        return seeOther(reply, `${teamOf(env)}?removed=${encodeURIComponent(other.email)}`);
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/team/:id/resend',
      manage,
      async (request, reply) => {
        const { member, env, other } = await actOn(request, request.params.id, 'invite');
        let renewed: Awaited<ReturnType<typeof resendInvitation>>;
        try {
          renewed = await resendInvitation(ctx.db, actorOf(request), {
            partnerId: member.partnerId,
            id: other.id,
          });
        } catch (err) {
          if (err instanceof InvitationAcceptedError) throw accepted();
          throw err;
        }
        if (!renewed)
          throw new PortalError(404, 'Member not found', 'The invitation was cancelled meanwhile.');
        await mailSignInLink(ctx.db, ctx.mailer, ctx.publicUrl(), renewed, { invitedBy: member });
        return seeOther(reply, `${teamOf(env)}?resent=${encodeURIComponent(other.email)}`);
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/team/:id/cancel',
      manage,
      async (request, reply) => {
        const { member, env, other } = await actOn(request, request.params.id, 'cancel');
        try {
          await ctx.changingMember(other.id, () =>
            cancelInvitation(ctx.db, actorOf(request), {
              partnerId: member.partnerId,
              id: other.id,
            }),
          );
        } catch (err) {
          if (err instanceof InvitationAcceptedError) throw accepted();
          throw err;
        }
        return seeOther(reply, `${teamOf(env)}?cancelled=${encodeURIComponent(other.email)}`);
      },
    );
  };
}
