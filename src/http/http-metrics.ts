/**
 * Request metrics of the HTTP pipeline (src/telemetry/metrics.ts): a count by method, route
 * template and status, a latency histogram by status class, and 429 refusals by route. Labels are
 * route templates (`/api/partner/products/:slug`), never URLs: an unmatched path counts as
 * `unmatched`, so no caller can grow the label set. Recorded by the access log's hook
 * (src/http/access-log.ts), which reads the route, status and latency once for both.
 */
import { rateLimitRefusals, recordHttpRequest } from '../telemetry/metrics.ts';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function recordRequestMetrics(
  method: string,
  route: string | undefined,
  status: number,
  seconds: number,
): void {
  const label = route ?? 'unmatched';
  recordHttpRequest(METHODS.has(method) ? method : 'OTHER', label, status, seconds);
  if (status === 429) rateLimitRefusals.inc({ route: label });
}
