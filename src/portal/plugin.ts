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
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Database } from '../db/client.ts';
import { createPortalMembersRepo } from '../db/portal-members.ts';
import { createDbSessionStore, type SessionStore } from '../db/portal-sessions.ts';
import type { ProductsRepo } from '../db/products.ts';
import type { SnapshotReads } from '../db/snapshot-reads.ts';
import { acceptsGzip, MIN_GZIP_BYTES } from '../http/content-encoding.ts';
import type { ReadCache } from '../http/read-cache.ts';
import type { Logger } from '../logger.ts';
import type { Redis } from '../redis.ts';
import type { AddressPolicy } from '../webhooks/address-policy.ts';
import { createSecretBox, type SecretBox } from '../webhooks/secret-box.ts';
import { enforce, undeclared } from './access.ts';
import { createChangeCache } from './change-cache.ts';
import { createPortalContext, PortalError, SESSION_COOKIE, seeOther } from './context.ts';
import { portalErrorHandler, portalNotFound } from './error-pages.ts';
import type { Mailer } from './mailer.ts';
import { createRedisSessionStore } from './redis-sessions.ts';
import { pageRoutes } from './routes/index.ts';
import { sameOrigin } from './same-origin.ts';
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
  /**
   * The webhook sender's address policy (configuredAddressPolicy): a destination whose host is an
   * IP literal it refuses is refused when added or edited. Required, so the two cannot differ.
   */
  addresses: AddressPolicy;
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
  // Every route says who may open it (access.ts): one that does not is refused at start.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
    const missing = undeclared(route);
    if (missing) throw new Error(`portal route ${missing} declares no role (config.requires)`);
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
    // No route matched: the not-found page, which any member may see (no route, no requirement).
    if (request.is404) return;
    enforce(request, member);
  });

  app.setErrorHandler(portalErrorHandler(ctx));
  app.setNotFoundHandler(portalNotFound(ctx));

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

  app.get('/', { config: { requires: 'member' } }, async (_request, reply) =>
    seeOther(reply, `${base()}/live/keys`),
  );

  await app.register(
    pageRoutes(ctx, {
      box,
      addresses: opts.addresses,
      signInLimit: opts.signInLimit ?? { max: 10, windowMs: 15 * 60_000 },
      embedUrl: () => opts.embedUrl?.() ?? `${new URL(opts.publicUrl()).origin}/embed`,
    }),
  );
};
