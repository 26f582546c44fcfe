/**
 * Error mapping: whatever goes wrong, the answer is the envelope `{ success: false, code, message }`
 * with the catalogue's status and an `x-request-id`, on every path a response can take:
 *
 * - through a route: ApiErrors carry their code; schema validation failures and errors Fastify
 *   raises (body parsing, limits) are mapped onto catalogue codes; anything else is 500
 *   internal_error, logged at error level with the request id, except an unreachable database or
 *   Redis: 503 service_unavailable with Retry-After, logged once per outage (outage.ts);
 * - in the router, before any route runs (a malformed URL, an over-long path parameter):
 *   `frameworkErrors`;
 * - in Node's HTTP parser, before there is a request at all (bytes that are not HTTP, a control
 *   character in a header, a bad Content-Length, Content-Length with Transfer-Encoding, headers over
 *   16 KiB): `clientErrorHandler`, which writes the envelope to the socket itself.
 */

import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../logger.ts';
import { ApiError, ERROR_CATALOGUE, type ErrorCode, envelope } from './errors.ts';
import type { BaseApp } from './fastify-app.ts';
import { createOutageLog, markOutageAnswer, OUTAGE_RETRY_AFTER_S, outageOf } from './outage.ts';
import { nextRequestId, REQUEST_ID_HEADER } from './request-id.ts';

/** Maps errors raised by Fastify itself (parsing, limits) onto catalogue codes. */
export function codeForFrameworkError(err: FastifyError): ErrorCode | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'payload_too_large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported_media_type';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'invalid_payload';
    // A path the router cannot decode or whose parameter is over-long names nothing that exists.
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return 'not_found';
  }
  if (err.statusCode === 404) return 'not_found';
  if (err.statusCode === 413) return 'payload_too_large';
  if (err.statusCode === 415) return 'unsupported_media_type';
  return undefined;
}

/**
 * Sends the envelope for `code`. Error bodies are serialised with JSON.stringify rather than the
 * route's response schema: an envelope is always the same three plain fields, and a code a route
 * does not document must still reach the client as an envelope, never as Fastify's
 * FST_ERR_FAILED_ERROR_SERIALIZATION 500. (The contract check of the API tests fails any code a
 * route answers without documenting it.)
 */
function sendEnvelope(reply: FastifyReply, code: ErrorCode, message?: string) {
  return reply
    .code(ERROR_CATALOGUE[code].status)
    .type('application/json; charset=utf-8')
    .serializer(JSON.stringify)
    .send(envelope(code, message));
}

/** Logs an error response: a 5xx at error level (someone must look), the rest at info. */
function logFailure(log: FastifyRequest['log'], status: number, details: object, msg: string) {
  if (status >= 500) log.error(details, msg);
  else log.info(details, msg);
}

/**
 * Errors the router raises before any route runs. Passed as Fastify's `frameworkErrors` option:
 * no hook has run, so the request id header and the log line are written here.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: unknown): void {
  // The router's generic reply type is not the app's; it is a plain reply here.
  const r = reply as FastifyReply;
  r.header(REQUEST_ID_HEADER, request.id);
  const code = codeForFrameworkError(err) ?? 'internal_error';
  const status = ERROR_CATALOGUE[code].status;
  logFailure(
    request.log,
    status,
    {
      err: status >= 500 ? err : undefined,
      errCode: err.code,
      method: request.method,
      statusCode: status,
    },
    'request refused by the router',
  );
  sendEnvelope(r, code, code === 'not_found' ? 'No such route.' : undefined);
}

/**
 * The answer to a request that failed because the database or Redis is unreachable: 503
 * service_unavailable with Retry-After, the outage logged once (src/http/outage.ts). False when
 * `err` is no outage.
 */
export function answerOutage(err: unknown, request: FastifyRequest, reply: FastifyReply): boolean {
  const dependency = outageOf(err);
  if (!dependency) return false;
  request.server.outages.report(dependency, err);
  markOutageAnswer(request);
  reply.header('retry-after', String(OUTAGE_RETRY_AFTER_S));
  return true;
}

export function installErrorMapping(app: BaseApp): void {
  app.decorate('outages', createOutageLog(app.log));
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) {
      reply.headers(err.headers);
      return sendEnvelope(reply, err.code, err.message);
    }
    if (err.validation) {
      // A path parameter that fails its schema (an empty or 300-character slug) names nothing
      // that exists: 404, like an unknown slug.
      const code: ErrorCode =
        err.validationContext === 'params'
          ? 'not_found'
          : (request.routeOptions.config?.validationErrorCode?.(err) ?? 'invalid_payload');
      return sendEnvelope(reply, code, repeatedParameterMessage(err, request));
    }
    const mapped = codeForFrameworkError(err);
    if (mapped) return sendEnvelope(reply, mapped);
    if (answerOutage(err, request, reply)) {
      return sendEnvelope(
        reply,
        'service_unavailable',
        `Storage is unreachable; retry after ${OUTAGE_RETRY_AFTER_S} seconds.`,
      );
    }
    request.log.error({ err }, 'unhandled error');
    return sendEnvelope(reply, 'internal_error');
  });

  app.setNotFoundHandler((_request, reply) => {
    sendEnvelope(reply, 'not_found', 'No such route.');
  });
}

/** The catalogue code for an error of Node's HTTP parser (see Node's `clientError` event). */
export function codeForClientError(err: NodeJS.ErrnoException): ErrorCode {
  if (err.code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'request_timeout';
  return 'malformed_request';
}

/**
 * Fastify's `clientErrorHandler`: Node's parser refused the bytes, so there is no request, no
 * reply and no route; the envelope is written to the socket, which is then closed (the stream
 * cannot be trusted past a parse error).
 */
export function clientErrorHandler(logger: Logger) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    // A reset connection has nobody to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const code = codeForClientError(err);
    const { status } = ERROR_CATALOGUE[code];
    const id = nextRequestId();
    // Never the raw bytes (err.rawPacket): they may hold a key.
    logger.info(
      { reqId: id, errCode: err.code, statusCode: status },
      'request refused by the HTTP parser',
    );
    // A response to an earlier request on this socket may be under way; then only close.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(envelope(code));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `${REQUEST_ID_HEADER}: ${id}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    // Half-closed peers that never close their side must not hold the socket.
    socket.setTimeout(5_000, () => socket.destroy());
  };
}

/** The query parameter a validation failure is about (its first error), if it is one. */
function failedQueryParameter(err: FastifyError): string | undefined {
  if (err.validationContext !== 'querystring') return undefined;
  const path = err.validation?.[0]?.instancePath;
  return path?.startsWith('/') ? path.slice(1).split('/')[0] : undefined;
}

/**
 * A route's `validationErrorCode` from its query parameters' own codes: the code of the parameter
 * that failed (a repeated `limit` is `invalid_limit`), `fallback` for anything else.
 */
export function codeOfQueryParameter(
  codes: Readonly<Record<string, ErrorCode>>,
  fallback: ErrorCode,
): (err: FastifyError) => ErrorCode {
  return (err) => {
    const name = failedQueryParameter(err);
    return name !== undefined && Object.hasOwn(codes, name) ? (codes[name] as ErrorCode) : fallback;
  };
}

/** A query parameter that takes one value, sent twice, says so (the code alone would mislead). */
function repeatedParameterMessage(err: FastifyError, request: FastifyRequest): string | undefined {
  const name = failedQueryParameter(err);
  if (name === undefined) return undefined;
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return Array.isArray(value)
    ? `The query parameter ${name.slice(0, 40)} was given more than once; send it once.`
    : undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Picks the catalogue code for a schema validation failure of this route. */
    validationErrorCode?: (err: FastifyError) => ErrorCode;
  }
}
