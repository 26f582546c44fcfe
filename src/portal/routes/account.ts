/** The member's own account: who they are, their passkeys, and signing out everywhere. */
import type { FastifyPluginAsync } from 'fastify';
import {
  type PortalContext,
  SESSION_COOKIE,
  seeOther,
  sendPage,
  sessionOf,
  signedIn,
} from '../context.ts';
import { html } from '../html.ts';
import { page, time } from '../layout.ts';
import { sessionCookieOptions } from './sign-in.ts';

export function accountRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;

    app.get<{ Params: { env: string } }>(
      '/:env/account',
      { config: { requires: 'member' } },
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const passkeys = await ctx.passkeys.listFor(member.id);
        const csrf = reply.generateCsrf();
        const q = request.query as { passkey?: string };
        return sendPage(
          reply,
          page({
            title: 'Your account',
            base: base(),
            csrf,
            member,
            env,
            section: 'account',
            passkeys: true,
            notice:
              q.passkey === 'added'
                ? 'Passkey added. Next time, sign in with it.'
                : q.passkey === 'removed'
                  ? 'Passkey removed. It can no longer sign in.'
                  : undefined,
            body: html`<p class="lead">Signed in as <strong>${member.email}</strong>, ${member.role} of ${member.partnerName}.</p>
<section class="panel" aria-labelledby="passkeys-heading">
  <h2 id="passkeys-heading">Passkeys</h2>
  <p>A passkey signs you in with your device's screen lock or a security key, without waiting for an email.</p>
  ${
    passkeys.length === 0
      ? html`<div class="empty"><strong>No passkeys yet</strong>Add one to sign in without an email link.</div>`
      : html`<table class="stack">
    <caption class="visually-hidden">Your passkeys</caption>
    <thead><tr><th scope="col">Name</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>${passkeys.map((p) => html`<tr><td data-label="Name">${p.name}</td><td data-label="Added">${time(p.createdAt)}</td><td data-label="Last used">${time(p.lastUsedAt, 'Never')}</td><td class="actions"><a href="${base()}/${env}/account/passkeys/${encodeURIComponent(p.id)}/remove" aria-label="Remove ${p.name}">Remove</a></td></tr>`)}</tbody>
  </table>
  <p class="hint">Lost a device? Remove its passkey here: signing out everywhere ends sessions, but a passkey signs in until it is removed.</p>`
  }
  <div id="passkey-register" class="inline passkey-form" data-options="${base()}/passkeys/register/options" data-verify="${base()}/passkeys/register" data-csrf="${csrf}" data-done="${base()}/${env}/account?passkey=added">
    <div class="field">
      <label for="passkey-name">Name of the new passkey</label>
      <input type="text" id="passkey-name" maxlength="64" placeholder="e.g. Work laptop">
    </div>
    <button type="button" data-passkey-register>Add a passkey</button>
    <p class="hint" id="passkey-status" role="status"></p>
  </div>
</section>
<section class="panel" aria-labelledby="sessions-heading">
  <h2 id="sessions-heading">Sessions</h2>
  <p>Sessions end after a period without activity. Lost a laptop? End every session, including this one.</p>
  <form method="post" action="${base()}/sign-out-everywhere">
    <input type="hidden" name="_csrf" value="${csrf}">
    <button type="submit" class="secondary">Sign out everywhere</button>
  </form>
</section>`,
          }),
        );
      },
    );

    app.post('/sign-out-everywhere', { config: { requires: 'member' } }, async (request, reply) => {
      const { member } = sessionOf(request);
      const ended = await ctx.sessions.destroyAllFor(member.id);
      await ctx.record(request, member, { action: 'member.signed_out_everywhere' });
      reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(ctx));
      return seeOther(reply, `${base()}/sign-in?signed_out=all-${ended}`);
    });
  };
}
