/**
 * Request ids: every response carries `x-request-id`, and every log line of a request names it. A
 * caller's own id is echoed when it is short and plain and not key-shaped; otherwise the service
 * makes one. A key sent as X-Request-Id was echoed and logged before (#33).
 */
import { randomBytes } from 'node:crypto';
import type { BaseApp } from './fastify-app.ts';
import { hasKeyShape } from './key-shapes.ts';

export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * A caller's own request id is echoed only when it is short and plain (it ends up in our logs) and
 * nothing in it looks like a credential (key-shapes.ts): a UUID, a W3C trace id, `abc-123` pass.
 */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
export const isSafeRequestId = (id: string) => SAFE_REQUEST_ID.test(id) && !hasKeyShape(id);

/**
 * A random per-process prefix and a counter. Unique across processes and restarts without drawing
 * random bytes per request (which cost ~9 % of the API's CPU under load); they identify a request
 * in the logs and are not secrets.
 */
const REQUEST_ID_PREFIX = `req_${randomBytes(9).toString('base64url')}`;
let requestCounter = 0;
export const nextRequestId = () => `${REQUEST_ID_PREFIX}${(++requestCounter).toString(36)}`;

/** Fastify's `genReqId`: the caller's id when it is safe to echo, else a fresh one. */
export function requestIdFor(req: { headers: Record<string, string | string[] | undefined> }) {
  const given = req.headers[REQUEST_ID_HEADER];
  return typeof given === 'string' && isSafeRequestId(given) ? given : nextRequestId();
}

/** Sends the request id back on every response that goes through Fastify's lifecycle. */
export function installRequestIds(app: BaseApp): void {
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onRequest', function sendRequestId(request, reply, done) {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
}
