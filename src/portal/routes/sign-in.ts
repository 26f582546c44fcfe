/**
 * Sign-in by one-time link, and sign-out. Asking for a link answers the same whether or not the
 * address belongs to a member (no enumeration); every attempt counts against the client address's
 * sign-in limit. Using a link starts a new session (a new id: rotation at sign-in).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Member } from '../../db/portal-members.ts';
import { invitationState, normaliseEmail } from '../../db/portal-members.ts';
import type { LinkRefusal } from '../../db/portal-sign-in-tokens.ts';
import { type PortalContext, PortalError, SESSION_COOKIE, seeOther, sendPage } from '../context.ts';
import { html } from '../html.ts';
import { barePage } from '../layout.ts';
import { returnPath, returnQuery } from '../return-path.ts';
import { mailSignInLink } from '../sign-in-links.ts';

export function sessionCookieOptions(ctx: PortalContext) {
  return {
    path: ctx.base() || '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: ctx.secure(),
  };
}

/** Starts a session for a member who just proved who they are (link or passkey). */
export async function startSession(
  ctx: PortalContext,
  request: FastifyRequest,
  reply: FastifyReply,
  member: Member,
  method: 'link' | 'passkey',
) {
  // The first sign-in accepts the invitation.
  if (!member.acceptedAt) await ctx.members.accept(member.id);
  // Rotation: whatever session the browser had ends; the new one gets a fresh id.
  const previous = request.cookies[SESSION_COOKIE];
  if (previous) await ctx.sessions.destroy(previous);
  const id = await ctx.sessions.create(member.id, {
    ip: request.ip,
    userAgent: request.headers['user-agent'],
  });
  reply.setCookie(SESSION_COOKIE, id, sessionCookieOptions(ctx));
  await ctx.record(request, member, { action: 'member.signed_in', target: `by ${method}` });
}

export function signInPage(
  ctx: PortalContext,
  csrf: string,
  opts: {
    email?: string;
    errors?: string[];
    notice?: string | undefined;
    /** A checked return path (return-path.ts): where the sign-in lands, when not the default. */
    returnTo?: string | undefined;
  } = {},
) {
  const base = ctx.base();
  const back = opts.returnTo
    ? html`
  <input type="hidden" name="return_to" value="${opts.returnTo}">`
    : '';
  const invalid = opts.errors?.length
    ? html` aria-invalid="true" aria-describedby="email-error"`
    : '';
  return barePage({
    base,
    title: 'Sign in',
    passkeys: true,
    errors: opts.errors,
    body: html`${opts.notice ? html`<div class="notice" role="status">${opts.notice}</div>` : ''}<p>We will email you a link that signs you in. It works once, for 15 minutes.</p>
<form method="post" action="${base}/sign-in" novalidate>
  <input type="hidden" name="_csrf" value="${csrf}">${back}
  <div class="field">
    <label for="email">Work email</label>
    ${opts.errors?.length ? html`<p class="hint" id="email-error">${opts.errors[0]}</p>` : ''}
    <input type="email" id="email" name="email" autocomplete="username webauthn" required value="${opts.email ?? ''}"${invalid}>
  </div>
  <button type="submit">Email me a sign-in link</button>
</form>
<div class="divider">or</div>
<div id="passkey-sign-in" data-options="${base}/passkeys/sign-in/options" data-verify="${base}/passkeys/sign-in" data-csrf="${csrf}"${opts.returnTo ? html` data-return="${opts.returnTo}"` : ''}>
  <button type="button" class="secondary" data-passkey-sign-in>Sign in with a passkey</button>
  <p class="hint" id="passkey-status" role="status"></p>
</div>`,
  });
}

export function signInRoutes(
  ctx: PortalContext,
  limit: { max: number; windowMs: number },
): FastifyPluginAsync {
  const rateLimit = { max: limit.max, timeWindow: limit.windowMs };
  return async (app) => {
    const base = ctx.base;
    /** A checked return path, or undefined for the default landing page. */
    const returnTo = (raw: unknown): string | undefined => {
      const path = returnPath(raw, base(), '');
      return path === '' ? undefined : path;
    };

    app.get<{ Querystring: { signed_out?: string; return_to?: string } }>(
      '/sign-in',
      { config: { portalPublic: true } },
      async (request, reply) =>
        sendPage(
          reply,
          signInPage(ctx, reply.generateCsrf(), {
            notice: signedOutNotice(request.query.signed_out),
            returnTo: returnTo(request.query.return_to),
          }),
        ),
    );

    app.post<{ Body: { email?: unknown; return_to?: unknown } }>(
      '/sign-in',
      { config: { portalPublic: true, rateLimit } },
      async (request, reply) => {
        const given = typeof request.body?.email === 'string' ? request.body.email : '';
        const email = normaliseEmail(given);
        const back = returnTo(request.body?.return_to);
        if (!email) {
          return sendPage(
            reply,
            signInPage(ctx, reply.generateCsrf(), {
              email: given.slice(0, 254),
              errors: ['Enter your work email address, like name@example.com.'],
              returnTo: back,
            }),
            400,
          );
        }
        const member = await ctx.members.findActiveByEmail(email);
        // An invitation that expired signs nobody in: no link (the page says the same either way).
        if (member && invitationState(member) !== 'expired')
          await mailSignInLink(ctx.db, ctx.mailer, ctx.publicUrl(), member, { returnTo: back });
        return sendPage(
          reply,
          barePage({
            base: base(),
            title: 'Check your email',
            body: html`<p>If <strong>${email}</strong> belongs to a member of a partner team, a sign-in link is on its way. It works once, for 15 minutes.</p>
<p><a href="${base()}/sign-in${returnQuery(back)}">Use another address</a></p>`,
          }),
        );
      },
    );

    app.get<{ Querystring: { token?: string; return_to?: string } }>(
      '/sign-in/link',
      { config: { portalPublic: true, rateLimit } },
      async (request, reply) => {
        const token = typeof request.query.token === 'string' ? request.query.token : '';
        if (!(await ctx.tokens.isUsable(token))) throw linkRefused(await ctx.tokens.refusal(token));
        const back = returnTo(request.query.return_to);
        return sendPage(
          reply,
          barePage({
            base: base(),
            title: 'Sign in to the partner portal',
            body: html`<p>This one-time link signs you in on this browser.</p>
<form method="post" action="${base()}/sign-in/link">
  <input type="hidden" name="_csrf" value="${reply.generateCsrf()}">
  <input type="hidden" name="token" value="${token}">${
    back
      ? html`
  <input type="hidden" name="return_to" value="${back}">`
      : ''
  }
  <button type="submit">Continue</button>
</form>`,
          }),
        );
      },
    );

    app.post<{ Body: { token?: unknown; return_to?: unknown } }>(
      '/sign-in/link',
      { config: { portalPublic: true, rateLimit } },
      async (request, reply) => {
        const token = typeof request.body?.token === 'string' ? request.body.token : '';
        const used = await ctx.tokens.consume(token);
        if (!used.ok) throw linkRefused(used);
        const member = await ctx.members.get(used.memberId);
        if (!member) throw linkRefused();
        await startSession(ctx, request, reply, member, 'link');
        return seeOther(reply, returnPath(request.body?.return_to, base(), `${base()}/live/keys`));
      },
    );

    app.post('/sign-out', { config: { requires: 'member' } }, async (request, reply) => {
      const id = request.cookies[SESSION_COOKIE];
      if (id) await ctx.sessions.destroy(id);
      reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(ctx));
      return seeOther(reply, `${base()}/sign-in?signed_out=1`);
    });
  };

  function linkRefused({ reason, team }: LinkRefusal = { reason: 'unknown' }) {
    const owners = team ? `an owner or admin of ${team}` : 'an owner or admin of your team';
    if (reason === 'invitation_cancelled') {
      return new PortalError(
        410,
        'This invitation was cancelled',
        `The invitation this link belongs to was cancelled, so the link no longer signs in. If you should have access, ask ${owners} to invite you again.`,
      );
    }
    if (reason === 'removed') {
      return new PortalError(
        410,
        'You are no longer a member of this team',
        `You were removed from ${team ?? 'the team'}, so this link no longer signs in. If you should have access, ask ${owners} to invite you again.`,
      );
    }
    if (reason === 'invitation_expired') {
      return new PortalError(
        410,
        'This invitation has expired',
        'Invitations work for 7 days. Ask an owner or admin of your team to resend it from the Team page.',
      );
    }
    const why = {
      used: 'This sign-in link was already used: each link works once.',
      expired: 'This sign-in link has expired: links work for 15 minutes.',
      unknown:
        'This sign-in link is not valid: it may have been used, have expired, or be incomplete.',
    }[reason];
    return new PortalError(
      410,
      'This link no longer works',
      `${why} Ask for a new one on the sign-in page.`,
    );
  }
}

/**
 * What the sign-in page says after a sign-out: `signed_out=1` (this browser), or `signed_out=all-N`
 * (sign out everywhere, N sessions ended).
 */
export function signedOutNotice(raw: unknown): string | undefined {
  if (raw === '1') return 'You are signed out.';
  const all = typeof raw === 'string' ? /^all-(\d{1,6})$/.exec(raw) : null;
  if (!all) return undefined;
  const n = Number(all[1]);
  return `You are signed out everywhere: ${n} ${n === 1 ? 'session' : 'sessions'} ended.`;
}
