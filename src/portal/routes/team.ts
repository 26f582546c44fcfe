/**
 * The team: every member sees who is on it; owners and admins invite by email (the invitee gets a
 * one-time sign-in link) and remove members. Removing a member ends all their sessions at once.
 * Only owners invite or remove owners, nobody removes themselves, and the last owner stays.
 */
import type { FastifyPluginAsync } from 'fastify';
import {
  isMemberRole,
  MEMBER_ROLES,
  type Member,
  MemberExistsError,
  type MemberRole,
  normaliseEmail,
} from '../../db/portal-members.ts';
import type { Environment } from '../../db/products.ts';
import { inviteMember, LastOwnerError, removeMember } from '../../operations/team.ts';
import { permits } from '../access.ts';
import { confirmView } from '../confirm.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  signedIn,
} from '../context.ts';
import { html } from '../html.ts';
import { page, time } from '../layout.ts';
import { canManageRole } from '../roles.ts';
import { mailSignInLink } from '../sign-in-links.ts';

const ROLE_HINT: Record<MemberRole, string> = {
  owner: 'everything, including owners',
  admin: 'keys in both environments, the team, the audit log',
  developer: 'test keys; sees live keys',
  viewer: 'sees keys and the team',
};

export function teamRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;

    async function teamPage(
      member: Member,
      env: Environment,
      csrf: string,
      extra: { errors?: string[]; email?: string; role?: string; notice?: string } = {},
    ) {
      const members = await ctx.teamPages.get(`team:${member.partnerId}`, () =>
        ctx.members.listActive(member.partnerId),
      );
      const manage = permits(member.role, 'team.manage');
      const roles = MEMBER_ROLES.filter((r) => canManageRole(member.role, r));
      const invalid = extra.errors?.length ? html` aria-invalid="true"` : '';
      return page({
        title: 'Team',
        base: base(),
        csrf,
        member,
        env,
        section: 'team',
        errors: extra.errors,
        notice: extra.notice,
        body: html`<p class="lead">Everyone who can sign in to ${member.partnerName}'s portal. What each role may do is in the table of <a href="${base()}/${env}/team#roles">roles</a>.</p>
${
  manage
    ? html`<section class="panel" aria-labelledby="invite-heading">
  <h2 id="invite-heading">Invite a member</h2>
  <form method="post" action="${base()}/${env}/team" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="field">
      <label for="invite-email">Email</label>
      <input type="email" id="invite-email" name="email" required value="${extra.email ?? ''}"${invalid}>
    </div>
    <div class="field">
      <label for="invite-role">Role</label>
      <select id="invite-role" name="role">${roles.map(
        (r) =>
          html`<option value="${r}" ${r === (extra.role ?? 'developer') ? 'selected' : ''}>${r} — ${ROLE_HINT[r]}</option>`,
      )}</select>
    </div>
    <div class="field"><button type="submit">Send invitation</button></div>
  </form>
  <p class="hint">They get an email with a one-time sign-in link (15 minutes). Sending again sends a new link.</p>
</section>`
    : ''
}
<h2>Members</h2>
<table>
  <caption class="visually-hidden">Team members</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Member since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${members.map(
    (m) => html`<tr>
    <td>${m.email}${m.id === member.id ? html` <span class="hint">(you)</span>` : ''}</td>
    <td>${m.role}</td>
    <td>${time(m.createdAt)}</td>
    <td class="actions">${
      manage && m.id !== member.id && canManageRole(member.role, m.role)
        ? html`<a href="${base()}/${env}/team/${m.id}/remove" aria-label="Remove ${m.email}">Remove</a>`
        : ''
    }</td>
  </tr>`,
  )}</tbody>
</table>
<h2 id="roles">Roles</h2>
<table>
  <caption class="visually-hidden">What each role may do</caption>
  <thead><tr><th scope="col">Role</th><th scope="col">May</th></tr></thead>
  <tbody>${MEMBER_ROLES.map((r) => html`<tr><td>${r}</td><td>${ROLE_HINT[r]}</td></tr>`)}</tbody>
</table>`,
      });
    }

    function refuse(member: Member, what: string) {
      return new PortalError(
        403,
        'Not allowed',
        `As ${member.role} you cannot ${what}. Ask an owner${member.role === 'admin' ? '' : ' or admin'} of your team.`,
      );
    }

    async function ownMember(member: Member, id: string): Promise<Member> {
      const other = await ctx.members.get(id);
      if (!other || other.partnerId !== member.partnerId || other.removedAt) {
        throw new PortalError(404, 'Member not found', 'There is no such member on your team.');
      }
      return other;
    }

    const manage = { config: { requires: 'team.manage' as const } };

    app.get<{ Params: { env: string } }>(
      '/:env/team',
      { config: { requires: 'team.view' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const q = request.query as { removed?: string; invited?: string };
        const notice =
          typeof q.invited === 'string'
            ? `Invitation sent to ${q.invited.slice(0, 254)}.`
            : typeof q.removed === 'string'
              ? `${q.removed.slice(0, 254)} was removed and signed out.`
              : undefined;
        return sendPage(reply, await teamPage(member, env, reply.generateCsrf(), { notice }));
      },
    );

    app.post<{ Params: { env: string }; Body: { email?: unknown; role?: unknown } }>(
      '/:env/team',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const given = typeof request.body?.email === 'string' ? request.body.email : '';
        const role = request.body?.role;
        const email = normaliseEmail(given);
        const again = (errors: string[]) =>
          teamPage(member, env, reply.generateCsrf(), {
            errors,
            email: given.slice(0, 254),
            role: typeof role === 'string' ? role : undefined,
          }).then((p) => sendPage(reply, p, 400));
        if (!email) return again(['Enter the email address of the person to invite.']);
        if (!isMemberRole(role)) return again(['Choose a role for the new member.']);
        if (!canManageRole(member.role, role)) throw refuse(member, `invite an ${role}`);
        let invited: Member;
        try {
          invited = await inviteMember(ctx.db, actorOf(request), {
            partnerId: member.partnerId,
            email,
            role,
          });
        } catch (err) {
          if (err instanceof MemberExistsError) {
            return again([`${email} is already a member of a partner team.`]);
          }
          throw err;
        }
        await mailSignInLink(ctx.db, ctx.mailer, ctx.publicUrl(), invited, member);
        return seeOther(reply, `${base()}/${env}/team?invited=${encodeURIComponent(email)}`);
      },
    );

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/team/:id/remove',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const other = await ownMember(member, request.params.id);
        const csrf = reply.generateCsrf();
        return sendPage(
          reply,
          page({
            title: 'Remove a member',
            base: base(),
            csrf,
            member,
            env,
            section: 'team',
            body: confirmView({
              action: `${base()}/${env}/team/${other.id}/remove`,
              csrf,
              question: html`<p>Remove <strong>${other.email}</strong> (${other.role}) from the team? They are signed out everywhere at once and can no longer sign in. Keys they created keep working.</p>`,
              button: 'Remove member',
              danger: true,
              cancel: `${base()}/${env}/team`,
            }),
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/team/:id/remove',
      manage,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const other = await ownMember(member, request.params.id);
        if (other.id === member.id) {
          throw new PortalError(
            400,
            'Not possible',
            'You cannot remove yourself; ask another owner or admin.',
          );
        }
        if (!canManageRole(member.role, other.role))
          throw refuse(member, `remove an ${other.role}`);
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
        return seeOther(reply, `${base()}/${env}/team?removed=${encodeURIComponent(other.email)}`);
      },
    );
  };
}
