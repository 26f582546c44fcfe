/**
 * The authenticated partner scope (register it with `app.register`, which encapsulates its hooks to
 * the routes inside): every route registered inside it needs `X-Api-Key`, and is
 * limited per key. Checks run in the order DECISIONS fixes: the key (401), then the per-key rate
 * limit (429), then the request shape (400, by the routes' schemas), then ownership and state.
 *
 * - Missing, unknown and revoked keys answer 401 missing_api_key / invalid_api_key / revoked_api_key.
 *   Each failure counts against the client address; past FAILED_AUTH_LIMIT failures in a minute
 *   further failures from it answer 429 rate_limited until the window ends. A valid key is never
 *   refused by this count.
 * - Budgets: 1000 requests a minute for live keys, 100 for sandbox keys, in fixed windows that start
 *   at a key's first request. Every authenticated response carries RateLimit-Limit, -Remaining and
 *   -Reset (seconds); a 429 also carries Retry-After. With Redis, all API processes share each
 *   key's budget; while Redis is unreachable each process enforces it alone, in memory.
 */
import type {} from '@fastify/swagger'; // its FastifySchema fields (security) are used below
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  type ApiKeyRecord,
  type ApiKeysRepo,
  type CachedKeyLookup,
  keyWorks,
} from '../db/api-keys.ts';
import type { Environment } from '../db/products.ts';
import { ApiError, type ErrorCode } from '../http/errors.ts';
import { createFallbackCounter, createMemoryCounter } from '../http/fixed-window.ts';
import type { HeldAnswers } from '../http/held-answers.ts';
import { errorResponses } from '../http/schemas.ts';
import type { Logger } from '../logger.ts';
import type { Redis } from '../redis.ts';
import { countedBudget, createFrontLane, type FrontLane } from './front-lane.ts';
import { productErrorCodes, type StateRule } from './product-access.ts';

/** Codes every partner route can answer, whatever it does. */
const SCOPE_ERRORS = [
  'missing_api_key',
  'invalid_api_key',
  'revoked_api_key',
  'rate_limited',
  // Text PostgreSQL refuses in the path, query or headers (src/http/text-check.ts).
  'malformed_request',
  'internal_error',
  // The database or Redis is unreachable (src/http/outage.ts).
  'service_unavailable',
] as const;

export const RATE_LIMITS: Record<Environment, number> = { live: 1000, test: 100 };
export const RATE_WINDOW_MS = 60_000;
export const FAILED_AUTH_LIMIT = 30;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The codes this route can answer beyond its scope's and its product rule's; documented. */
    errorCodes?: readonly ErrorCode[];
  }
}

export interface PartnerScopeOptions {
  /** findByKey looks a key up; cachedByKey, when given, answers from memory without a promise. */
  keys: Pick<ApiKeysRepo, 'findByKey'> & CachedKeyLookup;
  redis?: Redis | undefined;
  /**
   * The front lane (front-lane.ts): made here, with this scope's key lookup and budgets, and
   * handed to `use`. Absent: every request takes the lifecycle.
   */
  front?: {
    held: HeldAnswers;
    closing: () => boolean;
    metrics: boolean;
    use: (lane: FrontLane) => void;
  };
  /** The partner routes, registered inside the scope. */
  routes: FastifyPluginAsync[];
  /** Length of a rate-limit window; tests shorten it, the service uses RATE_WINDOW_MS. */
  windowMs?: number;
  /**
   * Clock of the in-memory windows (budgets and failed authentication), in ms; tests drive it so
   * a window ends when they say, not when the machine gets there. Redis windows use Redis's clock.
   */
  clock?: () => number;
}

/** Every code a route in the scope can answer, from its declarations. */
export function routeErrorCodes(
  config: { serves?: StateRule; errorCodes?: readonly ErrorCode[] } | undefined,
): ErrorCode[] {
  const codes = [
    ...SCOPE_ERRORS,
    ...(config?.serves ? productErrorCodes(config.serves) : []),
    ...(config?.errorCodes ?? []),
  ];
  return [...new Set(codes)];
}

/** The key a request presents (`X-Api-Key`; the first, if the header is repeated). */
const presentedKey = (request: FastifyRequest): string | undefined => {
  const header = request.headers['x-api-key'];
  return Array.isArray(header) ? header[0] : header;
};

const retryAfter = (ms: number) => ({ 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) });

export const partnerScope: FastifyPluginAsync<PartnerScopeOptions> = async (app, options) => {
  const windowMs = options.windowMs ?? RATE_WINDOW_MS;
  const redis = options.redis;
  const failures = redis
    ? createFallbackCounter(redis, 'pys:authfail:', createMemoryCounter(options.clock))
    : createMemoryCounter(options.clock);

  // Only failed attempts count, and only they are refused past the limit: a valid key is never
  // blocked by them (partners behind one egress address must not lock each other out). The count
  // is one atomic hit, so N concurrent failures answer exactly FAILED_AUTH_LIMIT 401s, then 429s.
  const fail = async (
    request: FastifyRequest,
    code: 'missing_api_key' | 'invalid_api_key' | 'revoked_api_key',
  ) => {
    let attempt: { count: number; resetMs: number };
    try {
      attempt = await failures.hit(request.ip, windowMs);
    } catch (err) {
      // Like the budgets: a broken Redis must not turn a 401 into a 500; the attempt goes uncounted.
      request.log.warn({ err }, 'failed-authentication count unavailable');
      return new ApiError(code);
    }
    if (attempt.count > FAILED_AUTH_LIMIT) {
      return new ApiError(
        'rate_limited',
        'Too many failed authentication attempts from this address.',
        retryAfter(attempt.resetMs),
      );
    }
    return new ApiError(code);
  };

  // Every route in the scope documents the key, and its error responses: those the scope itself can
  // answer, those that follow from the product states it serves, and its own `config.errorCodes`,
  // merged per status.
  app.addHook('onRoute', (route) => {
    route.schema ??= {};
    const schema = route.schema;
    schema.security = [{ ApiKey: [] }];
    schema.response = {
      ...errorResponses(routeErrorCodes(route.config)),
      ...(schema.response as object),
    };
  });

  // The per-key budgets. The Redis keys are `pys:rl:<key id>`, as when @fastify/rate-limit's hook
  // counted them through rateLimitStore (so processes of either build share one count during a
  // rolling deploy), and the headers are the ones it sent (its draft-spec names).
  const budgets = redis
    ? createFallbackCounter(redis, 'pys:rl:', createMemoryCounter(options.clock))
    : createMemoryCounter(options.clock);

  // The key, then its budget, in one hook (DECISIONS' order: 401 before 429). The budget was
  // @fastify/rate-limit's own onRequest hook; counted here it costs one hit instead of a second
  // hook and five promises a request (#33 item 7). Keyed by the verified key, never by the raw
  // header (an attacker must not be able to spend someone else's budget).
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    record: ApiKeyRecord,
    budget: { count: number; resetMs: number },
  ): ApiError | undefined => {
    request.partner = {
      keyId: record.id,
      partnerId: record.partnerId,
      partnerName: record.partnerName,
      environment: record.environment,
    };
    const max = RATE_LIMITS[record.environment];
    const resetS = Math.ceil(budget.resetMs / 1000);
    reply.header('ratelimit-limit', max);
    if (budget.count <= max) {
      reply.header('ratelimit-remaining', max - budget.count);
      reply.header('ratelimit-reset', resetS);
      return undefined;
    }
    reply.header('ratelimit-remaining', 0);
    reply.header('ratelimit-reset', resetS);
    reply.header('retry-after', resetS);
    return new ApiError('rate_limited');
  };

  const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
    const presented = presentedKey(request);
    if (!presented) throw await fail(request, 'missing_api_key');
    const record = await options.keys.findByKey(presented);
    if (!record) throw await fail(request, 'invalid_api_key');
    // A rolled key keeps working until its revocation time (DECISIONS, "Portal").
    if (!keyWorks(record)) throw await fail(request, 'revoked_api_key');
    let budget = countedBudget(request) ?? { count: 0, resetMs: 0 };
    try {
      if (countedBudget(request) === undefined) budget = await budgets.hit(record.id, windowMs);
    } catch (err) {
      // The counter falls back to memory rather than fail; should it fail anyway, the request is
      // served uncounted rather than answered 500.
      request.log.warn({ err }, 'rate-limit count unavailable');
    }
    const refused = admit(request, reply, record, budget);
    if (refused) throw refused;
  };

  // A callback hook: the common case, a working key the read cache holds counted in this
  // process's memory (no Redis), is answered without a promise or a microtask; every other case
  // (a key to look up, a refusal, a budget in Redis) takes the awaited path, in the same order.
  const hitNow = budgets.hitNow;
  app.addHook('onRequest', function admitKey(request, reply, done) {
    if (hitNow && options.keys.cachedByKey) {
      const presented = presentedKey(request);
      const record = presented ? options.keys.cachedByKey(presented)?.value : undefined;
      if (record && keyWorks(record)) {
        // A request the front lane counted and left to the lifecycle is not counted again.
        done(admit(request, reply, record, countedBudget(request) ?? hitNow(record.id, windowMs)));
        return;
      }
    }
    authenticate(request, reply).then(() => done(), done);
  });

  if (options.front) {
    options.front.use(
      createFrontLane({
        held: options.front.held,
        keys: options.keys,
        hitNow,
        windowMs,
        limitOf: (record) => RATE_LIMITS[record.environment],
        closing: options.front.closing,
        logger: app.log as Logger,
        metrics: options.front.metrics,
      }),
    );
  }

  for (const routes of options.routes) await app.register(routes);
};
