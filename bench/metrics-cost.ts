/**
 * `npx tsx bench/metrics-cost.ts`: the CPU the metrics add, measured directly in this process, as a
 * bound that machine noise cannot hide (bench:api's on/off req/s varies by ±20 % between two
 * processes on two shared cores, far more than the metrics cost):
 * - per request: recordRequestMetrics (the access log's hook calls it once per request), over the
 *   API's real route templates and statuses;
 * - per scrape: rendering the registry (default process metrics, the HTTP series) as /metrics does.
 * Prints each cost and what it is as a share of a request at the req/s bench:api measures.
 */
import { recordRequestMetrics } from '../src/http/http-metrics.ts';
import { registry } from '../src/telemetry/metrics.ts';

const ROUTES = [
  '/api/partner/products',
  '/api/partner/products/:slug',
  '/api/partner/products/:slug/apy-history',
  '/api/partner/products/:slug/fee-stats',
  '/api/partner/products/:slug/yield-calc',
  '/api/partner/products/:slug/health',
  '/api/partner/products/:slug/position',
];
const STATUSES = [200, 200, 200, 200, 304, 400, 404, 429];
const N = 2_000_000;

function perCallNs(): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    recordRequestMetrics(
      'GET',
      ROUTES[i % ROUTES.length],
      STATUSES[i % STATUSES.length]!,
      0.001 + (i % 50) / 1000,
    );
  }
  return Number(process.hrtime.bigint() - start) / N;
}

async function perScrapeMs(): Promise<{ ms: number; bytes: number }> {
  let bytes = 0;
  const runs = 200;
  const start = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) bytes = (await registry.metrics()).length;
  return { ms: Number(process.hrtime.bigint() - start) / runs / 1e6, bytes };
}

perCallNs(); // warm-up
const calls = [perCallNs(), perCallNs(), perCallNs()].sort((a, b) => a - b);
await perScrapeMs();
const scrapes = [await perScrapeMs(), await perScrapeMs(), await perScrapeMs()].sort(
  (a, b) => a.ms - b.ms,
);
const callNs = calls[1]!;
const scrape = scrapes[1]!;
console.log(`recordRequestMetrics: ${callNs.toFixed(0)} ns per request (median of 3 × ${N})`);
console.log(
  `one scrape (registry.metrics(), ${scrape.bytes} bytes): ${scrape.ms.toFixed(2)} ms (median of 3 × 200)`,
);
for (const rps of [10_000, 15_000]) {
  const requestNs = 1e9 / rps; // one core's time per request at that rate
  const share = (callNs / requestNs) * 100;
  const scrapeShare = ((scrape.ms * 1e6) / 1e9) * 100; // one scrape a second
  console.log(
    `at ${rps} req/s on one core: ${share.toFixed(2)} % per request + ${scrapeShare.toFixed(2)} % for a scrape every second = ${(share + scrapeShare).toFixed(2)} %`,
  );
}
