/**
 * Removing a passkey, behind a fresh sign-in: a session that began more than REAUTH_WINDOW_MS ago
 * (10 minutes) is asked to sign in again first, as GitHub's sudo mode asks — a session left open on
 * a shared or stolen machine cannot take away the owner's way back in, or quietly keep its own.
 * That sign-in carries this page's path (return-path.ts) and lands back here.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Member } from '../../db/portal-members.ts';
import type { Passkey } from '../../db/portal-passkeys.ts';
import { REAUTH_WINDOW_MS } from '../../db/portal-sessions.ts';
import { removePasskey } from '../../operations/passkeys.ts';
import { confirmView } from '../confirm.ts';
import {
  actorOf,
  type PortalContext,
  PortalError,
  seeOther,
  sendPage,
  sessionOf,
  signedIn,
} from '../context.ts';
import { html } from '../html.ts';
import { page } from '../layout.ts';
import { returnQuery } from '../return-path.ts';

export function passkeyRemovalRoutes(ctx: PortalContext): FastifyPluginAsync {
  return async (app) => {
    const base = ctx.base;
    const anyMember = { config: { requires: 'member' as const } };

    async function ownPasskey(member: Member, id: string): Promise<Passkey> {
      const passkey = await ctx.passkeys.get(id);
      if (!passkey || passkey.memberId !== member.id) {
        throw new PortalError(404, 'Passkey not found', 'You have no passkey with this id.');
      }
      return passkey;
    }

    const fresh = (request: FastifyRequest) =>
      ctx.sessions.signedInRecently(sessionOf(request).sessionId);

    function signInAgain(env: string, member: Member, csrf: string, passkey: Passkey) {
      return page({
        title: 'Confirm it’s you',
        base: base(),
        csrf,
        member,
        env: env as 'live' | 'test',
        section: 'account',
        body: html`<div class="panel"><p>Removing a passkey needs a fresh sign-in: you signed in more than ${REAUTH_WINDOW_MS / 60_000} minutes ago. Sign in again, with an email link or another passkey: you come back to this page, and can then remove <strong>${passkey.name}</strong> within ${REAUTH_WINDOW_MS / 60_000} minutes.</p>
<p class="buttons"><a class="button" href="${base()}/sign-in${returnQuery(`${base()}/${env}/account/passkeys/${encodeURIComponent(passkey.id)}/remove`)}">Sign in again</a><a href="${base()}/${env}/account">Cancel</a></p></div>`,
      });
    }

    app.get<{ Params: { env: string; id: string } }>(
      '/:env/account/passkeys/:id/remove',
      anyMember,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const passkey = await ownPasskey(member, request.params.id);
        const csrf = reply.generateCsrf();
        if (!(await fresh(request))) {
          return sendPage(reply, signInAgain(env, member, csrf, passkey), 403);
        }
        const body = confirmView({
          action: `${base()}/${env}/account/passkeys/${encodeURIComponent(passkey.id)}/remove`,
          csrf,
          question: html`<p>Remove the passkey <strong>${passkey.name}</strong>? It can no longer sign you in, from any device. Your other passkeys and email links still work.</p>`,
          button: 'Remove passkey',
          danger: true,
          cancel: `${base()}/${env}/account`,
        });
        return sendPage(
          reply,
          page({
            title: 'Remove a passkey',
            base: base(),
            csrf,
            member,
            env,
            section: 'account',
            body,
          }),
        );
      },
    );

    app.post<{ Params: { env: string; id: string } }>(
      '/:env/account/passkeys/:id/remove',
      anyMember,
      async (request, reply) => {
        const { member, env } = signedIn(request);
        const passkey = await ownPasskey(member, request.params.id);
        if (!(await fresh(request))) {
          return sendPage(reply, signInAgain(env, member, reply.generateCsrf(), passkey), 403);
        }
        await removePasskey(ctx.db, actorOf(request), member, passkey.id);
        return seeOther(reply, `${base()}/${env}/account?passkey=removed`);
      },
    );
  };
}
