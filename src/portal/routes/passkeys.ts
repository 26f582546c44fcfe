/**
 * Passkeys (WebAuthn, SimpleWebAuthn): a signed-in member registers one; anyone signs in with one
 * (discoverable credentials: no email needed). The relying party is the portal's public host; the
 * expected origin is its public origin.
 *
 * Each ceremony's challenge travels in a short-lived HttpOnly cookie, sealed with the service's
 * secret box (AES-256-GCM under the master key, which every process sharing the database has), so
 * any API process can finish a ceremony another one began, with no extra table. The cookie is
 * cleared when the ceremony ends.
 *
 * These endpoints answer JSON to the page's script: `{ success, code, message }` on failure, with a
 * message in words.
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import { type PortalContext, PortalError, sessionOf } from '../context.ts';
import { returnPath } from '../return-path.ts';
import { startSession } from './sign-in.ts';

const CHALLENGE_COOKIE = 'portal_webauthn';
const CEREMONY_MS = 5 * 60_000;
const NAME_MAX = 64;

/**
 * SimpleWebAuthn and its dependencies (~80 modules) load on the first ceremony, not with the portal:
 * the service's start (liveness) does not wait for them (#13).
 */
let webauthnModule: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webauthn = () => {
  webauthnModule ??= import('@simplewebauthn/server');
  return webauthnModule;
};

type Ceremony = 'register' | 'sign-in';
interface Sealed {
  challenge: string;
  memberId: string | null;
  expires: number;
}

function fail(status: number, message: string): PortalError {
  return new PortalError(status, 'Passkey not accepted', message);
}

export function passkeyRoutes(
  ctx: PortalContext,
  box: SecretBox,
  limit: { max: number; windowMs: number },
): FastifyPluginAsync {
  const rateLimit = { max: limit.max, timeWindow: limit.windowMs };
  const rp = () => {
    const u = new URL(ctx.publicUrl());
    return { rpID: u.hostname, origin: u.origin };
  };
  const cookieOptions = () => ({
    path: ctx.base() || '/',
    httpOnly: true,
    sameSite: 'strict' as const,
    secure: ctx.secure(),
    maxAge: CEREMONY_MS / 1000,
  });

  function seal(
    reply: FastifyReply,
    ceremony: Ceremony,
    challenge: string,
    memberId: string | null,
  ) {
    const value: Sealed = { challenge, memberId, expires: Date.now() + CEREMONY_MS };
    reply.setCookie(
      CHALLENGE_COOKIE,
      box.encrypt(JSON.stringify(value), `portal-webauthn:${ceremony}`),
      cookieOptions(),
    );
  }

  function unseal(request: FastifyRequest, reply: FastifyReply, ceremony: Ceremony): Sealed {
    const raw = request.cookies[CHALLENGE_COOKIE];
    reply.clearCookie(CHALLENGE_COOKIE, cookieOptions());
    let sealed: Sealed | undefined;
    try {
      sealed = raw
        ? (JSON.parse(box.decrypt(raw, `portal-webauthn:${ceremony}`)) as Sealed)
        : undefined;
    } catch {
      sealed = undefined;
    }
    if (!sealed || sealed.expires < Date.now()) {
      throw fail(400, 'The passkey request expired or was already used. Try again.');
    }
    return sealed;
  }

  return async (app) => {
    app.post(
      '/passkeys/register/options',
      { config: { portalJson: true, requires: 'member' } },
      async (request, reply) => {
        const { member } = sessionOf(request);
        const existing = await ctx.passkeys.listFor(member.id);
        const options = await (await webauthn()).generateRegistrationOptions({
          rpName: 'Partner portal',
          rpID: rp().rpID,
          userName: member.email,
          userDisplayName: `${member.email} (${member.partnerName})`,
          userID: new TextEncoder().encode(member.id),
          attestationType: 'none',
          excludeCredentials: existing.map((p) => ({ id: p.id, transports: p.transports })),
          authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
        });
        seal(reply, 'register', options.challenge, member.id);
        return options;
      },
    );

    app.post<{ Body: { response?: RegistrationResponseJSON; name?: unknown } }>(
      '/passkeys/register',
      { config: { portalJson: true, requires: 'member' } },
      async (request, reply) => {
        const { member } = sessionOf(request);
        const sealed = unseal(request, reply, 'register');
        if (sealed.memberId !== member.id) throw fail(400, 'Start adding the passkey again.');
        const response = request.body?.response;
        if (!response || typeof response !== 'object') throw fail(400, 'No passkey was sent.');
        const { verifyRegistrationResponse } = await webauthn();
        let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
        try {
          verified = await verifyRegistrationResponse({
            response,
            expectedChallenge: sealed.challenge,
            expectedOrigin: rp().origin,
            expectedRPID: rp().rpID,
            requireUserVerification: false,
          });
        } catch (err) {
          request.log.info({ reason: (err as Error).message }, 'passkey registration refused');
          throw fail(400, 'Your browser sent a passkey this portal cannot accept. Try again.');
        }
        if (!verified.verified) throw fail(400, 'The passkey could not be verified. Try again.');
        const { credential } = verified.registrationInfo;
        const rawName = typeof request.body?.name === 'string' ? request.body.name.trim() : '';
        const name =
          rawName.slice(0, NAME_MAX) || `Passkey added ${new Date().toISOString().slice(0, 10)}`;
        await ctx.passkeys.add({
          id: credential.id,
          memberId: member.id,
          publicKey: credential.publicKey,
          counter: credential.counter,
          transports: credential.transports ?? [],
          name,
        });
        await ctx.record(request, member, { action: 'passkey.registered', target: name });
        return { success: true };
      },
    );

    app.post(
      '/passkeys/sign-in/options',
      { config: { portalPublic: true, portalJson: true, rateLimit } },
      async (_request, reply) => {
        const options = await (await webauthn()).generateAuthenticationOptions({
          rpID: rp().rpID,
          userVerification: 'preferred',
        });
        seal(reply, 'sign-in', options.challenge, null);
        return options;
      },
    );

    app.post<{ Body: { response?: AuthenticationResponseJSON; return_to?: unknown } }>(
      '/passkeys/sign-in',
      { config: { portalPublic: true, portalJson: true, rateLimit } },
      async (request, reply) => {
        const sealed = unseal(request, reply, 'sign-in');
        const response = request.body?.response;
        if (!response || typeof response.id !== 'string') throw fail(400, 'No passkey was sent.');
        const passkey = await ctx.passkeys.get(response.id);
        const member = passkey && (await ctx.members.get(passkey.memberId));
        if (!passkey || !member || member.removedAt) {
          throw fail(
            401,
            'This passkey is not registered here. Sign in with an email link instead.',
          );
        }
        const { verifyAuthenticationResponse } = await webauthn();
        let verified: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
        try {
          verified = await verifyAuthenticationResponse({
            response,
            expectedChallenge: sealed.challenge,
            expectedOrigin: rp().origin,
            expectedRPID: rp().rpID,
            credential: {
              id: passkey.id,
              publicKey: new Uint8Array(passkey.publicKey),
              counter: passkey.counter,
              transports: passkey.transports as never, // stored as given by the browser
            },
            requireUserVerification: false,
          });
        } catch (err) {
          request.log.info({ reason: (err as Error).message }, 'passkey sign-in refused');
          throw fail(401, 'The passkey could not be verified. Try again, or use an email link.');
        }
        if (!verified.verified) throw fail(401, 'The passkey could not be verified.');
        await ctx.passkeys.markUsed(passkey.id, verified.authenticationInfo.newCounter);
        await startSession(ctx, request, reply, member, 'passkey');
        const base = ctx.base();
        return {
          success: true,
          redirect: returnPath(request.body?.return_to, base, `${base}/live/keys`),
        };
      },
    );
  };
}
