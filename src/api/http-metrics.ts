/**
 * Request metrics of the HTTP pipeline (src/telemetry/metrics.ts): a count by method, route
 * template and status, a latency histogram by status class, and 429 refusals by route. Labels are
 * route templates (`/api/partner/products/:slug`), never URLs: an unmatched path counts as
 * `unmatched`, so no caller can grow the label set.
 */
import { rateLimitRefusals, recordHttpRequest } from '../telemetry/metrics.ts';
import type { BaseApp } from './fastify-app.ts';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function installHttpMetrics(app: BaseApp): void {
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const method = METHODS.has(request.method) ? request.method : 'OTHER';
    const status = reply.statusCode;
    recordHttpRequest(method, route, status, reply.elapsedTime / 1000);
    if (status === 429) rateLimitRefusals.inc({ route });
    done();
  });
}
