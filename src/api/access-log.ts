/**
 * One access-log line per request, with only fields that cannot carry a secret: never headers,
 * and a URL whose credentials (an API key or a portal sign-in token in the query) are redacted.
 */
import type { BaseApp } from './fastify-app.ts';

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
 * `[redacted]`. Names are compared decoded (`api%5Fkey` is `api_key`); the rest is kept verbatim.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return SECRET_QUERY_PARAMS.has(decodedName(name)) ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

export function installAccessLog(app: BaseApp): void {
  app.addHook('onResponse', async (request, reply) => {
    // A 5xx is logged at error level (with the request id, as every line of a request), except
    // the readiness probe's 503: "not ready yet" is its normal answer while the service starts.
    const level =
      reply.statusCode < 500 ? 'info' : request.routeOptions.config?.probe ? 'warn' : 'error';
    request.log[level](
      {
        method: request.method,
        url: redactUrl(request.url),
        route: request.routeOptions.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A probe route (readiness): its 503 is logged at warn, not error. */
    probe?: boolean;
  }
}
