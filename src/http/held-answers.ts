/**
 * Held answers: the bytes and headers of a successful answer the route itself sent, kept so that
 * the same request can be answered again in front of the framework (src/api/front-lane.ts) for as
 * long as the route says the answer still holds (#33 item 7).
 *
 * Why it cannot answer differently from the route: nothing here renders anything. A route opts in
 * per answer (`holdAnswer(request, stillValid)`), naming what its answer depends on beyond the
 * request itself; the last onSend hook of the route then records what the framework is about to
 * write (status 200, every header but the per-request ones, the payload), keyed by the exact
 * request URL, the caller's scope and whether the caller takes gzip. An entry is used only while
 * its `stillValid()` answers true, and dropped as soon as it does not. Per-request headers (request
 * id, rate-limit counts) are never held; the lane makes them with the same functions the hooks use.
 */
import type { FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { LRUCache } from 'lru-cache';
import { acceptsGzip } from './content-encoding.ts';
import type { BaseApp } from './fastify-app.ts';

/** Headers made anew for every request (by the hooks, or by Node), never held. */
export const PER_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'x-request-id',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
  'connection',
  'keep-alive',
  'date',
  'content-length',
  'transfer-encoding',
]);

export interface HeldAnswer {
  /** The route's template (`/api/partner/products/:slug`), for the access log and metrics. */
  route: string;
  /** The held headers, lower-case names, in the order the route's reply had them. */
  headers: ReadonlyArray<readonly [string, string]>;
  body: Buffer;
  stillValid: () => boolean;
}

export interface HeldAnswers {
  /** The held answer for this URL, scope and encoding, if it still holds (else it is dropped). */
  find(scope: string, gzip: boolean, url: string): HeldAnswer | undefined;
  /** How many answers are held (tests, metrics). */
  readonly size: number;
  clear(): void;
}

const HOLD = Symbol('hold this answer while');

/**
 * The route's promise that the answer it is sending is its answer to every request with the same
 * URL, scope and Accept-Encoding choice for as long as `stillValid()` is true. Call it only for
 * answers built from the request's URL, its caller's scope and what `stillValid` checks.
 */
export function holdAnswer(request: FastifyRequest, stillValid: () => boolean): void {
  (request as FastifyRequest & { [HOLD]?: () => boolean })[HOLD] = stillValid;
}

const heldKey = (scope: string, gzip: boolean, url: string) =>
  `${scope}\n${gzip ? 'gzip' : 'identity'}\n${url}`;

export interface HeldAnswersOptions {
  /** The caller's scope of a request that reached its route (its partner and environment). */
  scopeOf: (request: FastifyRequest) => string | undefined;
  /** Whether the service is closing (its answers then say `Connection: close`: none is held). */
  closing: () => boolean;
  /** Bytes of bodies held at most; least recently used answers go first. Default 32 MiB. */
  maxBytes?: number;
}

/**
 * Installs the recording hook: added to every route as its last onSend hook when the route is
 * registered, so it sees the headers every other hook has set. Install it after every other
 * installer that adds route-level onSend hooks (cache-control.ts).
 */
export function installHeldAnswers(app: BaseApp, options: HeldAnswersOptions): HeldAnswers {
  const entries = new LRUCache<string, HeldAnswer>({
    maxSize: options.maxBytes ?? 32 * 1024 * 1024,
    sizeCalculation: (a) => a.body.length + 256,
  });

  const record = (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const stillValid = (request as FastifyRequest & { [HOLD]?: () => boolean })[HOLD];
    if (stillValid === undefined || reply.statusCode !== 200 || options.closing()) return;
    // The lane answers GET only; a HEAD's payload is emptied by Fastify's own onSend hook.
    if (request.method !== 'GET') return;
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return;
    const scope = options.scopeOf(request);
    const route = request.routeOptions.url;
    if (scope === undefined || route === undefined) return;
    const headers: Array<readonly [string, string]> = [];
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (PER_REQUEST_HEADERS.has(name)) continue;
      // A header the lane could not send as it is (a number, a list) keeps the answer unheld.
      if (typeof value !== 'string') return;
      headers.push([name, value]);
    }
    const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
    const gzip = acceptsGzip(request.headers['accept-encoding']);
    entries.set(heldKey(scope, gzip, request.url), { route, headers, body, stillValid });
  };

  // Only routes that declare `config.heldAnswers` hold anything: the others pay no hook.
  app.addHook('onRoute', (route) => {
    if (route.config?.heldAnswers !== true) return;
    const recordHeldAnswer: onSendHookHandler = (request, reply, payload, done) => {
      record(request, reply, payload);
      done(null, payload);
    };
    const own = route.onSend === undefined ? [] : [route.onSend].flat();
    route.onSend = [...own, recordHeldAnswer];
  });

  return {
    find(scope, gzip, url) {
      const key = heldKey(scope, gzip, url);
      const held = entries.get(key);
      if (held === undefined) return undefined;
      if (held.stillValid()) return held;
      entries.delete(key);
      return undefined;
    },
    get size() {
      return entries.size;
    },
    clear: () => entries.clear(),
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route may hold its answers (holdAnswer); see held-answers.ts. */
    heldAnswers?: boolean;
  }
}
