/** The member's own account: who they are, their passkeys, and signing out everywhere. */
import type { FastifyPluginAsync } from 'fastify';
import {
  envParam,
  type PortalContext,
  SESSION_COOKIE,
  seeOther,
  sendPage,
  sessionOf,
} from '../context.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import { sessionCookieOptions } from './sign-in.ts';

export function accountRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;

    app.get<{ Params: { env: string } }>('/:env/account', async (request, reply) => {
      const env = envParam(request);
      const { member } = sessionOf(request);
      const csrf = reply.generateCsrf();
      return sendPage(
        reply,
        page({
          title: 'Your account',
          base: base(),
          csrf,
          member,
          env,
          section: 'account',
          body: html`<p class="lead">Signed in as <strong>${member.email}</strong>, ${member.role} of ${member.partnerName}.</p>
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
    });

    app.post('/sign-out-everywhere', async (request, reply) => {
      const { member } = sessionOf(request);
      await ctx.sessions.destroyAllFor(member.id);
      await ctx.record(request, member, { action: 'member.signed_out_everywhere' });
      reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(ctx));
      return seeOther(reply, `${base()}/sign-in`);
    });
  };
}
