/**
 * Request ids: every response carries `x-request-id`, and every log line of a request names it. A
 * caller's own id is echoed when it is short and plain; otherwise the service makes one.
 */
import { randomBytes } from 'node:crypto';
import type { BaseApp } from './fastify-app.ts';

export const REQUEST_ID_HEADER = 'x-request-id';

/** A caller's own request id is echoed only when it is short and plain (it ends up in our logs). */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
  return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : nextRequestId();
}

/** Sends the request id back on every response that goes through Fastify's lifecycle. */
export function installRequestIds(app: BaseApp): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
}
