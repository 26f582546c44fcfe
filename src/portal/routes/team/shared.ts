/** What the team pages share: the page itself, a member's look-up, the role refusal. */
import {
  type InvitationState,
  invitationState,
  MEMBER_ROLES,
  type Member,
} from '../../../db/portal-members.ts';
import type { Environment } from '../../../db/products.ts';
import { permits } from '../../access.ts';
import { type PortalContext, PortalError } from '../../context.ts';
import { html } from '../../html.ts';
import { page, time } from '../../layout.ts';
import { canManageRole, ROLE_SUMMARY } from '../../roles.ts';

const STATE_LABEL: Record<InvitationState, string> = {
  active: 'Active',
  invited: 'Invited',
  expired: 'Invitation expired',
};
const STATE_CLASS: Record<InvitationState, string> = {
  active: 'active',
  invited: 'expiring',
  expired: 'revoked',
};

/** Only owners invite or remove owners: the part of the rule the route's role cannot say. */
export function refuseRole(member: Member, what: string) {
  return new PortalError(
    403,
    'Not allowed',
    `As ${member.role} you cannot ${what}. Ask an owner${member.role === 'admin' ? '' : ' or admin'} of your team.`,
  );
}

export async function ownMember(ctx: PortalContext, member: Member, id: string): Promise<Member> {
  const other = await ctx.members.get(id);
  if (!other || other.partnerId !== member.partnerId || other.removedAt) {
    throw new PortalError(404, 'Member not found', 'There is no such member on your team.');
  }
  return other;
}

function memberRow(
  base: string,
  env: Environment,
  csrf: string,
  me: Member,
  m: Member,
  manage: boolean,
) {
  const state = invitationState(m);
  const mayAct = manage && m.id !== me.id && canManageRole(me.role, m.role);
  const here = `${base}/${env}/team/${m.id}`;
  const actions = !mayAct
    ? ''
    : state === 'active'
      ? html`<a href="${here}/remove" aria-label="Remove ${m.email}">Remove</a>`
      : html`<form method="post" action="${here}/resend" class="inline-action"><input type="hidden" name="_csrf" value="${csrf}"><button type="submit" class="link-button" aria-label="Resend the invitation to ${m.email}">Resend</button></form><a href="${here}/cancel" aria-label="Cancel the invitation of ${m.email}">Cancel</a>`;
  return html`<tr>
    <td data-label="Email">${m.email}${m.id === me.id ? html` <span class="hint">(you)</span>` : ''}</td>
    <td data-label="Role">${m.role}</td>
    <td data-label="State"><span class="status status-${STATE_CLASS[state]}">${STATE_LABEL[state]}</span>${
      state === 'invited'
        ? html`<br><span class="hint">until ${time(m.inviteExpiresAt)}</span>`
        : state === 'expired'
          ? html`<br><span class="hint">on ${time(m.inviteExpiresAt)}</span>`
          : ''
    }</td>
    <td data-label="Since">${time(m.acceptedAt ?? m.createdAt)}</td>
    <td class="actions">${actions}</td>
  </tr>`;
}

export async function teamPage(
  ctx: PortalContext,
  member: Member,
  env: Environment,
  csrf: string,
  extra: { errors?: string[]; email?: string; role?: string; notice?: string } = {},
) {
  const base = ctx.base();
  const members = await ctx.teamPages.get(`team:${member.partnerId}`, () =>
    ctx.members.listActive(member.partnerId),
  );
  const manage = permits(member.role, 'team.manage');
  const roles = MEMBER_ROLES.filter((r) => canManageRole(member.role, r));
  const invalid = extra.errors?.length ? html` aria-invalid="true"` : '';
  return page({
    title: 'Team',
    base,
    csrf,
    member,
    env,
    section: 'team',
    errors: extra.errors,
    notice: extra.notice,
    body: html`<p class="lead">Everyone who can sign in to ${member.partnerName}'s portal, and the invitations not yet accepted. What each role may do is in the table of <a href="${base}/${env}/team#roles">roles</a>.</p>
${
  manage
    ? html`<section class="panel" aria-labelledby="invite-heading">
  <h2 id="invite-heading">Invite a member</h2>
  <form method="post" action="${base}/${env}/team" class="inline">
    <input type="hidden" name="_csrf" value="${csrf}">
    <div class="field">
      <label for="invite-email">Email</label>
      <input type="email" id="invite-email" name="email" required value="${extra.email ?? ''}"${invalid}>
    </div>
    <fieldset class="field role-choices">
      <legend>Role</legend>
      ${roles.map(
        (r) => html`<div class="role-choice">
        <div class="radio"><input type="radio" id="invite-role-${r}" name="role" value="${r}" ${r === (extra.role ?? 'developer') ? 'checked' : ''} aria-describedby="invite-role-${r}-desc"><label for="invite-role-${r}">${r}</label></div>
        <p class="hint" id="invite-role-${r}-desc">${ROLE_SUMMARY[r]}</p>
      </div>`,
      )}
    </fieldset>
    <div class="field"><button type="submit">Send invitation</button></div>
  </form>
  <p class="hint">They get an email with a one-time sign-in link (15 minutes); the invitation itself lasts 7 days, during which they can ask the sign-in page for a new link. Not accepted by then, it expires: resend it, or cancel it.</p>
</section>`
    : ''
}
<h2>Members</h2>
<table class="stack">
  <caption class="visually-hidden">Team members and invitations</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">State</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${members.map((m) => memberRow(base, env, csrf, member, m, manage))}</tbody>
</table>
<h2 id="roles">Roles</h2>
<table class="stack">
  <caption class="visually-hidden">What each role may do</caption>
  <thead><tr><th scope="col">Role</th><th scope="col">May</th></tr></thead>
  <tbody>${MEMBER_ROLES.map((r) => html`<tr><td data-label="Role">${r}</td><td data-label="May">${ROLE_SUMMARY[r]}</td></tr>`)}</tbody>
</table>`,
  });
}
