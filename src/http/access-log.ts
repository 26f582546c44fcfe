/**
 * One access-log line per request, with only fields that cannot carry a secret: never headers,
 * and a URL whose credentials (an API key or a portal sign-in token in the query, anything
 * key-shaped anywhere) are redacted.
 * The same hook records the request metrics when they are on (src/http/http-metrics.ts): one hook
 * reads the route, status and latency once for both, so metrics add a map update per request and
 * no hook of their own.
 */
import type { BaseApp } from './fastify-app.ts';
import { recordRequestMetrics } from './http-metrics.ts';
import { redactKeyShaped } from './key-shapes.ts';
import { isOutageAnswer } from './outage.ts';
import { logsAt } from './request-logger.ts';

/** Query parameter names whose values are credentials (compared decoded and lower-cased). */
const SECRET_QUERY_PARAMS = new Set([
  'token',
  'api_key',
  'apikey',
  'api-key',
  'x-api-key',
  'key',
  'secret',
  'password',
  'access_token',
]);

const decodedName = (name: string) => {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
};

/**
 * The URL as logged: the value of every credential-bearing query parameter replaced by
 * `[redacted]`, and anything key-shaped elsewhere (a key sent in the path, in another
 * parameter) too (key-shapes.ts). Names are compared decoded (`api%5Fkey` is `api_key`); the rest
 * is kept verbatim.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return redactKeyShaped(url);
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return SECRET_QUERY_PARAMS.has(decodedName(name)) ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return redactKeyShaped(`${url.slice(0, q)}?${query}`);
}

export const ACCESS_MESSAGE = 'request completed';

/** The fields of a request's access line (also written by src/api/front-lane.ts). */
export function accessLine(
  method: string,
  url: string,
  route: string | undefined,
  statusCode: number,
  elapsedMs: number,
) {
  return {
    method,
    url: redactUrl(url),
    route,
    statusCode,
    responseTimeMs: Math.round(elapsedMs * 100) / 100,
  };
}

export function installAccessLog(app: BaseApp, options: { metrics?: boolean } = {}): void {
  const metrics = options.metrics === true;
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onResponse', function logAccess(request, reply, done) {
    const { url: route, config } = request.routeOptions;
    const status = reply.statusCode;
    const elapsedMs = reply.elapsedTime;
    // A 5xx is logged at error level (with the request id, as every line of a request), except
    // the readiness probe's 503: "not ready yet" is its normal answer while the service starts.
    // An outage's 503s are logged once per outage (outage.ts), so their lines stay at info.
    const level =
      status < 500 || isOutageAnswer(request) ? 'info' : config?.probe ? 'warn' : 'error';
    // The line (its redacted URL above all) is built only when the level is written: at
    // LOG_LEVEL=warn a 2xx costs no redaction at all (#33 item 7).
    if (logsAt(request.log, level)) {
      request.log[level](
        accessLine(request.method, request.url, route, status, elapsedMs),
        ACCESS_MESSAGE,
      );
    }
    if (metrics) recordRequestMetrics(request.method, route, status, elapsedMs / 1000);
    done();
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A probe route (readiness): its 503 is logged at warn, not error. */
    probe?: boolean;
  }
}
