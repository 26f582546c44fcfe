/**
 * The authenticated partner scope (register it with `app.register`, which encapsulates its hooks to
 * the routes inside): every route registered inside it needs `X-Api-Key`, and is
 * limited per key. Checks run in the order DECISIONS fixes: the key (401), then the per-key rate
 * limit (429), then the request shape (400, by the routes' schemas), then ownership and state.
 *
 * - Missing, unknown and revoked keys answer 401 missing_api_key / invalid_api_key / revoked_api_key.
 *   Each failure counts against the client address; past FAILED_AUTH_LIMIT failures in a minute the
 *   address gets 429 rate_limited until the window ends, whatever key it sends.
 * - Budgets: 1000 requests a minute for live keys, 100 for sandbox keys, in fixed windows that start
 *   at a key's first request. Every authenticated response carries RateLimit-Limit, -Remaining and
 *   -Reset (seconds); a 429 also carries Retry-After. With Redis, all API processes share each
 *   key's budget.
 */
import rateLimit from '@fastify/rate-limit';
import type {} from '@fastify/swagger'; // its FastifySchema fields (security) are used below
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { type ApiKeysRepo, keyWorks } from '../db/api-keys.ts';
import type { Environment } from '../db/products.ts';
import type { Redis } from '../redis.ts';
import { ApiError, type ErrorCode } from './errors.ts';
import { createMemoryCounter, createRedisCounter } from './fixed-window.ts';
import { errorResponses } from './schemas.ts';

/** Codes every partner route can answer, whatever it does. */
const SCOPE_ERRORS = [
  'missing_api_key',
  'invalid_api_key',
  'revoked_api_key',
  'rate_limited',
  'internal_error',
] as const;

export const RATE_LIMITS: Record<Environment, number> = { live: 1000, test: 100 };
export const RATE_WINDOW_MS = 60_000;
export const FAILED_AUTH_LIMIT = 30;

export interface PartnerIdentity {
  keyId: string;
  partnerId: string;
  partnerName: string;
  environment: Environment;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the partner scope once the key is verified. */
    partner?: PartnerIdentity;
  }
}

export interface PartnerScopeOptions {
  keys: ApiKeysRepo;
  redis?: Redis | undefined;
  /** The partner routes, registered inside the scope. */
  routes: FastifyPluginAsync[];
  /** Length of a rate-limit window; tests shorten it, the service uses RATE_WINDOW_MS. */
  windowMs?: number;
}

/** The verified identity of a request in the partner scope. */
export function partnerOf(request: FastifyRequest): PartnerIdentity {
  if (!request.partner) throw new Error('partnerOf() called outside the partner scope');
  return request.partner;
}

const retryAfter = (ms: number) => ({ 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) });

export const partnerScope: FastifyPluginAsync<PartnerScopeOptions> = async (app, options) => {
  const windowMs = options.windowMs ?? RATE_WINDOW_MS;
  const failures = options.redis
    ? createRedisCounter(options.redis, 'pys:authfail:')
    : createMemoryCounter();

  const fail = async (
    request: FastifyRequest,
    code: 'missing_api_key' | 'invalid_api_key' | 'revoked_api_key',
  ) => {
    await failures.hit(request.ip, windowMs);
    return new ApiError(code);
  };

  // Every route in the scope documents the key, and its error responses: those the scope itself can
  // answer plus the route's own `config.errorCodes`, merged per status.
  app.addHook('onRoute', (route) => {
    route.schema ??= {};
    const schema = route.schema;
    schema.security = [{ ApiKey: [] }];
    const own =
      (route.config as { errorCodes?: readonly ErrorCode[] } | undefined)?.errorCodes ?? [];
    schema.response = {
      ...errorResponses([...SCOPE_ERRORS, ...own]),
      ...(schema.response as object),
    };
  });

  app.addHook('onRequest', async (request) => {
    const blocked = await failures.peek(request.ip);
    if (blocked.count >= FAILED_AUTH_LIMIT) {
      throw new ApiError(
        'rate_limited',
        'Too many failed authentication attempts from this address.',
        retryAfter(blocked.resetMs),
      );
    }
    const header = request.headers['x-api-key'];
    const presented = Array.isArray(header) ? header[0] : header;
    if (!presented) throw await fail(request, 'missing_api_key');
    const record = await options.keys.findByKey(presented);
    if (!record) throw await fail(request, 'invalid_api_key');
    // A rolled key keeps working until its revocation time (DECISIONS, "Portal").
    if (!keyWorks(record)) throw await fail(request, 'revoked_api_key');
    request.partner = {
      keyId: record.id,
      partnerId: record.partnerId,
      partnerName: record.partnerName,
      environment: record.environment,
    };
  });

  // Registered after the auth hook, so it runs second; keyed by the verified key, never by the
  // raw header (an attacker must not be able to spend someone else's budget).
  await app.register(rateLimit, {
    hook: 'onRequest',
    global: true,
    timeWindow: windowMs,
    max: (request) => RATE_LIMITS[partnerOf(request).environment],
    keyGenerator: (request) => partnerOf(request).keyId,
    ...(options.redis ? { redis: options.redis, nameSpace: 'pys:rl:' } : {}),
    // A broken Redis must not turn every request into a 500; the RPC-style endpoints keep serving.
    skipOnError: true,
    enableDraftSpec: true,
    addHeadersOnExceeding: {
      'ratelimit-limit': true,
      'ratelimit-remaining': true,
      'ratelimit-reset': true,
    },
    addHeaders: {
      'ratelimit-limit': true,
      'ratelimit-remaining': true,
      'ratelimit-reset': true,
      'retry-after': true,
    },
    errorResponseBuilder: () => new ApiError('rate_limited'),
  });

  for (const routes of options.routes) await app.register(routes);
};
