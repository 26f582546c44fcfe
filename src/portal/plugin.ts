/**
 * The partner portal, a Fastify plugin the api role registers under `/portal`: server-rendered pages
 * (html.ts, layout.ts), sessions kept server-side, CSRF tokens on every state change, sign-in rate
 * limits, and its own error pages (HTML in words, never the API's JSON envelope).
 *
 * Security choices, in one place:
 * - The session cookie is HttpOnly, SameSite=Lax, Secure when the public address is HTTPS, scoped to
 *   the portal's path; a new session id is issued at every sign-in (rotation).
 * - Every POST must carry the CSRF token of @fastify/csrf-protection (a form field `_csrf` or the
 *   `x-csrf-token` header), checked before any handler runs.
 * - Pages are never framed or cached, send no Referer (sign-in links carry a token), and run only
 *   the portal's own scripts (Content-Security-Policy).
 */

import { randomBytes } from 'node:crypto';
import compress from '@fastify/compress';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import rateLimit from '@fastify/rate-limit';
import type { FastifyError, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Database } from '../db/client.ts';
import { createPortalMembersRepo } from '../db/portal-members.ts';
import { createDbSessionStore, type SessionStore } from '../db/portal-sessions.ts';
import type { ProductsRepo } from '../db/products.ts';
import type { SnapshotReads } from '../db/snapshot-reads.ts';
import { acceptsGzip, MIN_GZIP_BYTES } from '../http/content-encoding.ts';
import { answerOutage } from '../http/error-mapping.ts';
import type { ReadCache } from '../http/read-cache.ts';
import type { Logger } from '../logger.ts';
import type { Redis } from '../redis.ts';
import { createSecretBox, type SecretBox } from '../webhooks/secret-box.ts';
import { createChangeCache } from './change-cache.ts';
import {
  createPortalContext,
  type PortalContext,
  PortalError,
  SESSION_COOKIE,
  seeOther,
  sendPage,
} from './context.ts';
import { html } from './html.ts';
import { barePage } from './layout.ts';
import type { Mailer } from './mailer.ts';
import { createRedisSessionStore } from './redis-sessions.ts';
import { accountRoutes } from './routes/account.ts';
import { auditRoutes } from './routes/audit.ts';
import { embedSettingsRoutes } from './routes/embed-settings.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { keysRoutes } from './routes/keys.ts';
import { passkeyRoutes } from './routes/passkeys.ts';
import { productsRoutes } from './routes/products.ts';
import { signInRoutes } from './routes/sign-in.ts';
import { teamRoutes } from './routes/team.ts';
import { webhookEditRoutes } from './routes/webhook-edit.ts';
import { webhooksRoutes } from './routes/webhooks.ts';
import { createSignedInCache } from './signed-in-cache.ts';
import { staticAssets } from './static-assets.ts';

export interface PortalOptions {
  db: Database;
  logger: Logger;
  /** With Redis, sessions live there (shared by every API process) instead of the database. */
  redis?: Redis | undefined;
  mailer: Mailer;
  /** The portal's public address (`…/portal`); a function, as the listening port is known late. */
  publicUrl: () => string;
  /** Inactivity after which a session ends. */
  idleMs: number;
  /** Seals passkey challenges in cookies; without one (tests), a random key of this process. */
  secretBox?: SecretBox | undefined;
  /** Sign-in attempts allowed per client address and window (tests lower it). */
  signInLimit?: { max: number; windowMs: number };
  /** Clock of the dashboards' day windows (tests pin it). */
  now?: () => Date;
  /** The embed's public address (`…/embed`) for the Embed page's snippet; else /embed here. */
  embedUrl?: (() => string | undefined) | undefined;
  /** The API's cached reads of products and snapshots; without them (tests), direct reads. */
  reads?:
    | { products: ProductsRepo; snapshots: SnapshotReads; cache: Pick<ReadCache, 'get'> }
    | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A portal route reachable without a session (sign-in, static files). */
    portalPublic?: boolean;
    /** A portal route called by the page's script: errors answer JSON, not a page. */
    portalJson?: boolean;
  }
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export const portalPlugin: FastifyPluginAsync<PortalOptions> = async (app, opts) => {
  const store: SessionStore = opts.redis
    ? createRedisSessionStore(opts.redis, opts.idleMs)
    : createDbSessionStore(opts.db, opts.idleMs);
  // Cached only where one process owns the sessions (an embedded PGlite database); see
  // signed-in-cache.ts for why every sign-out and removal still takes effect at once.
  const signedIn = createSignedInCache(store, createPortalMembersRepo(opts.db).get, {
    enabled: !opts.redis && opts.db.engine === 'pglite',
    // Well inside the inactivity limit, however short an operator sets it.
    ttlMs: Math.min(30_000, opts.idleMs / 2),
  });
  // Cached only where this process hears of every change as it commits (PGlite); see there.
  const webhookPages = await createChangeCache(opts.db, 'webhook_changes');
  const teamPages = await createChangeCache(opts.db, 'team_changes');
  app.addHook('onClose', async () => {
    await webhookPages.close();
    await teamPages.close();
  });
  const ctx = createPortalContext({
    db: opts.db,
    logger: opts.logger,
    sessions: signedIn.sessions,
    changingMember: signedIn.changingMember,
    reads: opts.reads,
    webhookPages,
    teamPages,
    mailer: opts.mailer,
    publicUrl: opts.publicUrl,
    now: opts.now,
  });
  const base = ctx.base;

  // The portal's routes are pages, not API operations: keep them out of the OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });

  // The service's box (destination and inbound secrets must open in the dispatcher and the API);
  // tests without one get a random key of this process.
  const box = opts.secretBox ?? createSecretBox(randomBytes(32));

  await app.register(formbody, { bodyLimit: 16 * 1024 });
  await app.register(cookie);
  // A form's token is bound to the session it was shown in (its cookie's id, HMAC'd with a key
  // derived from the master key, the same in every API process): a token and CSRF cookie of one
  // member's session do not work with another's session cookie, even if planted from a sibling
  // host. Signed-out forms (sign-in) are bound to "no session".
  // (The library refuses an empty user info: a signed-out form is bound to a fixed word.)
  const sessionOf = (request: FastifyRequest) => request.cookies[SESSION_COOKIE] || 'signed-out';
  await app.register(csrf, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: 'portal_csrf',
    cookieOpts: { path: base() || '/', httpOnly: true, sameSite: 'lax', secure: ctx.secure() },
    getUserInfo: sessionOf,
    csrfOpts: { hmacKey: box.deriveKey('portal csrf') },
  });
  app.addHook('onRequest', (request, reply, done) => {
    const generate = reply.generateCsrf;
    reply.generateCsrf = (options) =>
      generate.call(reply, { userInfo: sessionOf(request), ...options });
    done();
  });
  await app.register(rateLimit, {
    global: false,
    ...(opts.redis ? { redis: opts.redis, nameSpace: 'pys:portal-rl:' } : {}),
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      new PortalError(
        429,
        'Too many attempts',
        `Too many sign-in attempts from your address. Try again in ${Math.max(1, Math.ceil(context.ttl / 60_000))} minute(s).`,
      ),
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(SECURITY_HEADERS);
    return payload;
  });
  // Pages of 1 KiB or more travel gzip-encoded to browsers that take it (all do): a page's HTML
  // is a few KB and compresses ~5×, at a few tens of microseconds per page. Static files are
  // compressed once, at start, and sent as they are (the plugin leaves an encoded body alone).
  await app.register(compress, {
    encodings: ['gzip'],
    threshold: MIN_GZIP_BYTES,
    customTypes: /^text\/html/,
  });

  // Every state change comes from the portal's own pages (Origin and Sec-Fetch-Site, when the
  // browser sends them) and carries the form's CSRF token; checked before the session and the
  // handler.
  app.addHook('preValidation', (request, reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD') return done();
    if (!sameOrigin(request, opts.publicUrl)) {
      return done(
        new PortalError(
          403,
          'Request from another site',
          'This change was sent from a page that is not the portal. Open the portal and try again there.',
        ),
      );
    }
    app.csrfProtection(request, reply, done);
  });

  // Signed-in routes: the session cookie names a live session of an active member, else sign in.
  app.addHook('preHandler', async (request, reply) => {
    if (request.routeOptions.config.portalPublic) return;
    const id = request.cookies[SESSION_COOKIE];
    const member = id ? await signedIn.resolve(id) : undefined;
    if (!id || !member) {
      if (request.method === 'GET') return seeOther(reply, `${base()}/sign-in`);
      throw new PortalError(
        401,
        'Signed out',
        'Your session has ended. Sign in again, then repeat what you were doing.',
      );
    }
    request.portal = { member, sessionId: id };
  });

  app.setErrorHandler((err: FastifyError | PortalError, request, reply) => {
    let status: number;
    let title: string;
    let message: string;
    if (err instanceof PortalError) {
      ({ status, title, message } = err);
    } else if (err.code === 'FST_CSRF_INVALID_TOKEN' || err.code === 'FST_CSRF_MISSING_SECRET') {
      status = 403;
      title = 'This form has expired';
      message = 'The form was older than your session. Go back, reload the page and try again.';
    } else if (err.statusCode === 413) {
      status = 413;
      title = 'Too much data';
      message = 'The form sent more than the portal accepts. Shorten the values and try again.';
    } else if (answerOutage(err, request, reply)) {
      // The database or Redis (sessions) is unreachable: logged once per outage, not per page.
      status = 503;
      title = 'The portal is briefly unavailable';
      message = 'Nothing was changed. Try again in a few seconds.';
    } else if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      status = 400;
      title = 'That did not work';
      message = 'The request was not understood. Go back, reload the page and try again.';
    } else {
      request.log.error({ err }, 'portal error');
      status = 500;
      title = 'Something went wrong on our side';
      message = 'Nothing was changed. Try again in a minute; if it keeps failing, contact support.';
    }
    if (request.routeOptions.config?.portalJson) {
      return reply.code(status).send({ success: false, code: codeFor(status), message });
    }
    return sendPage(reply, errorPage(ctx, request, title, message), status);
  });

  app.setNotFoundHandler((request, reply) =>
    sendPage(
      reply,
      errorPage(ctx, request, 'Page not found', 'There is no page at this address.'),
      404,
    ),
  );

  // Static files are compressed once, at start, and named by their content's hash: a request for
  // the current version may be cached for a year (static-assets.ts).
  for (const asset of staticAssets().values()) {
    app.get<{ Querystring: { v?: string } }>(
      `/static/${asset.name}`,
      { config: { portalPublic: true } },
      async (request, reply) => {
        reply
          .header('content-type', `${asset.type}; charset=utf-8`)
          .header(
            'cache-control',
            request.query.v === asset.hash
              ? 'public, max-age=31536000, immutable'
              : 'public, max-age=300',
          )
          .header('vary', 'accept-encoding');
        if (acceptsGzip(request.headers['accept-encoding'])) {
          return reply.header('content-encoding', 'gzip').send(asset.gzipped);
        }
        return reply.send(asset.body);
      },
    );
  }

  app.get('/', async (_request, reply) => seeOther(reply, `${base()}/live/keys`));

  const limit = opts.signInLimit ?? { max: 10, windowMs: 15 * 60_000 };
  await app.register(signInRoutes(ctx, limit));
  await app.register(productsRoutes(ctx));
  await app.register(keysRoutes(ctx));
  await app.register(teamRoutes(ctx));
  await app.register(auditRoutes(ctx));
  await app.register(accountRoutes(ctx));
  await app.register(webhooksRoutes(ctx, box));
  await app.register(webhookEditRoutes(ctx, box));
  await app.register(inboundRoutes(ctx, box));
  await app.register(
    embedSettingsRoutes(
      ctx,
      () => opts.embedUrl?.() ?? `${new URL(opts.publicUrl()).origin}/embed`,
    ),
  );
  await app.register(passkeyRoutes(ctx, box, limit));
};

/**
 * Whether a state change comes from the portal's own origin. `Sec-Fetch-Site` (sent by every
 * current browser) must be `same-origin`; `Origin`, when present and not `null`, must be this
 * request's own origin or the portal's public one. A client that sends neither (not a browser) is
 * judged by the CSRF token alone.
 */
function sameOrigin(request: FastifyRequest, publicUrl: () => string): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = request.headers.origin;
  // `null` says nothing: the portal's own pages send it (their Referrer-Policy is no-referrer,
  // which makes a browser serialise a form POST's origin as null); Sec-Fetch-Site above decides.
  if (origin === undefined || origin === 'null') return true;
  const own = `${request.protocol}://${request.headers.host ?? ''}`;
  let configured: string | undefined;
  try {
    configured = new URL(publicUrl()).origin;
  } catch {
    configured = undefined;
  }
  return origin === own || origin === configured;
}

function codeFor(status: number): string {
  return (
    {
      400: 'invalid_request',
      401: 'unauthorized',
      403: 'forbidden',
      429: 'rate_limited',
      503: 'service_unavailable',
    }[status] ?? 'internal_error'
  );
}

function errorPage(ctx: PortalContext, _request: FastifyRequest, title: string, message: string) {
  return barePage({
    base: ctx.base(),
    title,
    body: html`<p>${message}</p><p><a href="${ctx.base()}/">Go to the portal</a></p>`,
  });
}
