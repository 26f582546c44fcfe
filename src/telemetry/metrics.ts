/**
 * The service's Prometheus metrics (prom-client): every instrument is declared here, with its
 * labels, so the set an operator can alert on is read in one place (docs/maintainers/operations.md lists them).
 *
 * One registry per process, module-level: the modules that record (the HTTP pipeline, the chain
 * reader, the indexer, the dispatcher…) import it rather than have it passed through every factory,
 * and recording costs a map lookup when no one scrapes. Labels stay bounded: route templates (never
 * URLs), status codes, chain ids, product slugs and destination ids — sets the operator configures.
 *
 * Gauges that describe shared state (queue depths, the oldest pending delivery, the last finished
 * day per product) are read from the database at scrape time by the collectors in collectors.ts.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10];

/**
 * HTTP request counts and latencies: the hot path, one record per request. Kept as plain numbers
 * per (method, route, status) series and rendered at scrape time: prom-client's Counter.inc and
 * Histogram.observe hash their label object on every call, which bench:api measured as a
 * noticeable share of a cheap request's cost. Exposed as `http_requests_total` (counter) and
 * `http_request_duration_seconds` (histogram by status class).
 */
interface HttpSeries {
  method: string;
  route: string;
  status: string;
  statusClass: string;
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  buckets: number[];
}
const httpSeries = new Map<string, HttpSeries>();

export function recordHttpRequest(method: string, route: string, status: number, seconds: number) {
  const key = `${method} ${status} ${route}`;
  let s = httpSeries.get(key);
  if (!s) {
    s = {
      method,
      route,
      status: String(status),
      statusClass: `${Math.floor(status / 100)}xx`,
      count: 0,
      sum: 0,
      buckets: new Array(LATENCY_BUCKETS.length + 1).fill(0),
    };
    httpSeries.set(key, s);
  }
  s.count++;
  s.sum += seconds;
  let i = 0;
  while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++;
  s.buckets[i]!++;
}

interface RenderedValue {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** A metric prom-client's registry renders like its own (name, help, type, values). */
function customMetric(
  name: string,
  help: string,
  type: 'counter' | 'histogram',
  values: () => RenderedValue[],
) {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: 'sum' as const, values: values() }),
    reset: () => httpSeries.clear(),
  };
  // The registry takes any object of this shape; its type names prom-client's own classes.
  registry.registerMetric(metric as unknown as Parameters<typeof registry.registerMetric>[0]);
}

customMetric(
  'http_requests_total',
  'HTTP requests answered, by method, route template and status code.',
  'counter',
  () =>
    [...httpSeries.values()].map((s) => ({
      labels: { method: s.method, route: s.route, status: s.status },
      value: s.count,
    })),
);

customMetric(
  'http_request_duration_seconds',
  'Time to answer an HTTP request, by method, route template and status class (2xx, 4xx, 5xx…).',
  'histogram',
  () => {
    const byClass = new Map<
      string,
      { labels: Record<string, string>; buckets: number[]; sum: number; count: number }
    >();
    for (const s of httpSeries.values()) {
      const key = `${s.method} ${s.statusClass} ${s.route}`;
      let c = byClass.get(key);
      if (!c) {
        c = {
          labels: { method: s.method, route: s.route, status_class: s.statusClass },
          buckets: new Array(LATENCY_BUCKETS.length + 1).fill(0),
          sum: 0,
          count: 0,
        };
        byClass.set(key, c);
      }
      for (let i = 0; i < s.buckets.length; i++) c.buckets[i]! += s.buckets[i]!;
      c.sum += s.sum;
      c.count += s.count;
    }
    const out: RenderedValue[] = [];
    for (const c of byClass.values()) {
      let cumulative = 0;
      for (let i = 0; i <= LATENCY_BUCKETS.length; i++) {
        cumulative += c.buckets[i]!;
        out.push({
          metricName: 'http_request_duration_seconds_bucket',
          labels: { ...c.labels, le: i < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[i]! : '+Inf' },
          value: cumulative,
        });
      }
      out.push({ metricName: 'http_request_duration_seconds_sum', labels: c.labels, value: c.sum });
      out.push({
        metricName: 'http_request_duration_seconds_count',
        labels: c.labels,
        value: c.count,
      });
    }
    return out;
  },
);

export const rateLimitRefusals = new Counter({
  name: 'rate_limit_refusals_total',
  help: 'Requests refused with 429 rate_limited, by route template.',
  labelNames: ['route'] as const,
  registers: [registry],
});

/**
 * The read cache's lookups, counted as plain numbers (src/http/read-cache.ts) and handed to the
 * counter when /metrics is scraped: a prom-client increment on every lookup (three a request) was
 * ~1 % of the API's CPU under load (#33 item 7).
 */
export const readCacheLookups = { hit: 0, miss: 0 };

export const cacheLookups = new Counter({
  name: 'read_cache_lookups_total',
  help: 'Read-cache lookups of the API, by result (hit or miss).',
  labelNames: ['result'] as const,
  registers: [registry],
  collect() {
    this.reset();
    this.inc({ result: 'hit' }, readCacheLookups.hit);
    this.inc({ result: 'miss' }, readCacheLookups.miss);
  },
});

/**
 * Requests the partner API's front lane answered with a held answer (src/api/front-lane.ts),
 * counted as a plain number like the read-cache lookups; every other request took the lifecycle.
 */
export const frontLaneAnswers = { count: 0 };

export const frontLaneAnswersTotal = new Counter({
  name: 'http_front_lane_answers_total',
  help: 'Partner API requests answered from a held answer in front of the framework (src/api/front-lane.ts); also counted in http_requests_total.',
  registers: [registry],
  collect() {
    this.reset();
    this.inc(frontLaneAnswers.count);
  },
});

export const chainReadDuration = new Histogram({
  name: 'chain_read_duration_seconds',
  help: 'Live chain reads of the API (position, health), by chain id and outcome (ok or failed).',
  labelNames: ['chain_id', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const chainReadFailures = new Counter({
  name: 'chain_read_failures_total',
  help: 'Live chain reads answered 503 chain_rpc_unavailable (timeout, RPC error, chain not up), by chain id.',
  labelNames: ['chain_id'] as const,
  registers: [registry],
});

export const indexerLagBlocks = new Gauge({
  name: 'indexer_head_lag_blocks',
  help: "Blocks between the chain's head and the indexer's cursor after its last round (at least the confirmation depth), by chain id.",
  labelNames: ['chain_id'] as const,
  registers: [registry],
});

/** When each chain's indexer last reached the confirmed head, for the seconds gauge. */
const caughtUpAt = new Map<string, number>();
export const indexerLagSeconds = new Gauge({
  name: 'indexer_head_lag_seconds',
  help: 'Seconds since the indexer last reached the confirmed head of the chain (0 right after a round that did), by chain id.',
  labelNames: ['chain_id'] as const,
  registers: [registry],
  collect() {
    const now = Date.now();
    for (const [chainId, at] of caughtUpAt) this.set({ chain_id: chainId }, (now - at) / 1000);
  },
});

/** Called by the indexer after each round it ran while holding the chain's lease. */
export function recordIndexerRound(chainId: number, head: bigint, cursor: bigint, safe: bigint) {
  const id = String(chainId);
  indexerLagBlocks.set({ chain_id: id }, Number(head - cursor));
  if (cursor >= safe) caughtUpAt.set(id, Date.now());
  else if (!caughtUpAt.has(id)) caughtUpAt.set(id, Date.now());
}

/**
 * Logs a provider's range answer left out (a node behind the range answered it) that the indexer's
 * header check found by block hash: a provider whose nodes lag shows here, without any log lost.
 */
export const indexerLogsRecovered = new Counter({
  name: 'indexer_logs_recovered_total',
  help: 'Engine logs missing from an eth_getLogs range answer and found by block hash (a lagging provider node).',
  labelNames: ['chain_id'] as const,
  registers: [registry],
});

/** Stored chain events retracted because a reorganisation deeper than the confirmation removed them. */
export const chainEventsRetracted = new Counter({
  name: 'chain_events_retracted_total',
  help: 'Chain events retracted after a reorganisation deeper than the confirmation setting (chain_event.retracted sent).',
  labelNames: ['chain_id'] as const,
  registers: [registry],
});

export const jobTickFailures = new Counter({
  name: 'worker_job_failures_total',
  help: 'Worker job ticks that failed (and will be retried), by job name and whether the error is retryable.',
  labelNames: ['job', 'retryable'] as const,
  registers: [registry],
});

export const deliveryAttempts = new Counter({
  name: 'webhook_delivery_attempts_total',
  help: 'Outbound webhook delivery attempts, by destination id and outcome (delivered, failed, expired…).',
  labelNames: ['destination', 'outcome'] as const,
  registers: [registry],
});

export const deliveryDuration = new Histogram({
  name: 'webhook_delivery_duration_seconds',
  help: 'Time of one outbound webhook attempt (request to answer or failure), by destination id.',
  labelNames: ['destination'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const inboundEvents = new Counter({
  name: 'inbound_events_total',
  help: 'Signed inbound webhook requests, by outcome (accepted, duplicate, or the error code).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** Sources of pool figures (one per open PostgreSQL pool); summed at scrape time. */
const pools = new Set<() => { total: number; idle: number; waiting: number; max: number }>();
export function trackPool(
  stats: () => { total: number; idle: number; waiting: number; max: number },
) {
  pools.add(stats);
  return () => pools.delete(stats);
}
const poolGauge = (
  name: string,
  help: string,
  pick: (s: ReturnType<Parameters<typeof trackPool>[0]>) => number,
) =>
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      let sum = 0;
      for (const s of pools) sum += pick(s());
      this.set(sum);
    },
  });
poolGauge('db_pool_connections', 'Open PostgreSQL connections of the pool.', (s) => s.total);
poolGauge('db_pool_idle_connections', 'Idle PostgreSQL connections of the pool.', (s) => s.idle);
poolGauge(
  'db_pool_waiting_requests',
  'Queries waiting for a free connection (saturation: above 0 for long means DATABASE_POOL_MAX is too small or the database slow).',
  (s) => s.waiting,
);
poolGauge('db_pool_max_connections', 'DATABASE_POOL_MAX of the pool.', (s) => s.max);

/**
 * The signer (deployer) account's balance per chain, in ether (a float: for alerting, not
 * accounting). Set by the lifecycle worker at most once a minute per chain and after each mined
 * transaction (src/sync/signer-watch.ts).
 */
export const signerBalance = new Gauge({
  name: 'chain_signer_balance_ether',
  help: "Balance of the chain's signer (deployer) account, in ether, by chain id and address.",
  labelNames: ['chain_id', 'address'] as const,
  registers: [registry],
});

export const transactionReplacements = new Counter({
  name: 'chain_transaction_replacements_total',
  help: 'Operator transactions replaced at the same nonce with bumped fees (not mined within replace_after_blocks), by chain id.',
  labelNames: ['chain_id'] as const,
  registers: [registry],
});
