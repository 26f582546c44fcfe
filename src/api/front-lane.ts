/**
 * The partner API's front lane (#33 item 7): a request the route has already answered, with an
 * answer it holds (src/http/held-answers.ts), is answered again here, in front of the framework,
 * without Fastify's per-request lifecycle, which costs as much as the cached answers themselves
 * (docs/maintainers/decisions.md, "What the framework's lifecycle costs").
 *
 * It answers only the plain case and hands everything else to Fastify untouched (returns false):
 * - a GET without a body, from a working key the key cache holds, while the service is not closing;
 * - whose exact URL, caller scope (partner and environment) and gzip choice have a held answer
 *   that still holds;
 * - with headers the text check accepts, and a budget left, counted in this process's memory
 *   (with Redis the budgets are shared through it and every request takes the lifecycle).
 * So a missing, unknown or revoked key, a refusal, a first request, an expired or superseded answer
 * and every other route take the lifecycle as before. What it does for a request is what the
 * lifecycle's hooks do for it, with their own functions: the key and its budget (partner-scope.ts),
 * the text check of the headers, the request id, the rate-limit headers, the access line and the
 * request metrics. `test/api/front-lane.test.ts` answers every held route both ways and compares
 * status, headers and bytes, and fails when a hook is added to a held route that this lane does
 * not know of.
 *
 * A request counted here and then refused (its budget spent) continues into Fastify carrying its
 * count, so the lifecycle answers the 429 without counting it twice (countedBudget).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyRecord, CachedKeyLookup } from '../db/api-keys.ts';
import { keyWorks } from '../db/api-keys.ts';
import type { Environment } from '../db/products.ts';
import { ACCESS_MESSAGE, accessLine } from '../http/access-log.ts';
import { acceptsGzip } from '../http/content-encoding.ts';
import type { HeldAnswers } from '../http/held-answers.ts';
import { recordRequestMetrics } from '../http/http-metrics.ts';
import { REQUEST_ID_HEADER, requestIdFor } from '../http/request-id.ts';
import { holdsUnsafeText } from '../http/text-check.ts';
import type { Logger } from '../logger.ts';
import { frontLaneAnswers } from '../telemetry/metrics.ts';

/** The scope a held answer belongs to: answers differ by partner and environment, not by key. */
export const scopeOfPartner = (p: { partnerId: string; environment: Environment }) =>
  `${p.partnerId}:${p.environment}`;

export type Budget = { count: number; resetMs: number };

const COUNTED = Symbol('budget counted by the front lane');

/** The budget the front lane already counted for this request, if it did (partner-scope.ts). */
export function countedBudget(request: FastifyRequest): Budget | undefined {
  return (request.raw as IncomingMessage & { [COUNTED]?: Budget })[COUNTED];
}

export interface FrontLaneOptions {
  held: HeldAnswers;
  keys: CachedKeyLookup;
  /** The budgets' synchronous hit (in-memory counters); absent (Redis): the lane answers nothing. */
  hitNow: ((key: string, windowMs: number) => Budget) | undefined;
  windowMs: number;
  limitOf: (record: ApiKeyRecord) => number;
  closing: () => boolean;
  logger: Logger;
  metrics: boolean;
}

/** A request handler that answers (true) or leaves the request to Fastify (false). */
export type FrontLane = (req: IncomingMessage, res: ServerResponse) => boolean;

export function createFrontLane(options: FrontLaneOptions): FrontLane {
  const { held, hitNow, windowMs, logger } = options;
  const cachedByKey = options.keys.cachedByKey;
  if (hitNow === undefined || cachedByKey === undefined) return () => false;
  return (req, res) => {
    const started = performance.now();
    if (req.method !== 'GET' || options.closing()) return false;
    const headers = req.headers;
    const presented = headers['x-api-key'];
    if (typeof presented !== 'string') return false;
    // A body on a GET is the lifecycle's to refuse or ignore.
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) {
      return false;
    }
    const record = cachedByKey(presented)?.value;
    if (record === undefined || !keyWorks(record)) return false;
    const url = req.url;
    if (url === undefined) return false;
    const answer = held.find(scopeOfPartner(record), acceptsGzip(headers['accept-encoding']), url);
    if (answer === undefined) return false;
    // The held URL passed the text check when the route answered it; these headers are new.
    if (holdsUnsafeText(headers)) return false;

    const budget = hitNow(record.id, windowMs);
    const max = options.limitOf(record);
    if (budget.count > max) {
      (req as IncomingMessage & { [COUNTED]?: Budget })[COUNTED] = budget;
      return false;
    }
    const requestId = requestIdFor(req);
    const out: Record<string, string> = {
      [REQUEST_ID_HEADER]: requestId,
      'ratelimit-limit': String(max),
      'ratelimit-remaining': String(max - budget.count),
      'ratelimit-reset': String(Math.ceil(budget.resetMs / 1000)),
    };
    for (const [name, value] of answer.headers) out[name] = value;
    out['content-length'] = String(answer.body.length);
    res.writeHead(200, out);
    res.end(answer.body);
    frontLaneAnswers.count++;

    const elapsedMs = performance.now() - started;
    if (logger.isLevelEnabled('info')) {
      logger
        .child({ reqId: requestId })
        .info(accessLine('GET', url, answer.route, 200, elapsedMs), ACCESS_MESSAGE);
    }
    if (options.metrics) recordRequestMetrics('GET', answer.route, 200, elapsedMs / 1000);
    return true;
  };
}
