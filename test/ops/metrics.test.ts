/**
 * /metrics of a real running service (api and worker, the demo on the local chain): the endpoint
 * is on its own port and not on the API's, and the figures an operator alerts on move with real
 * traffic — requests by route template, 429s, cache hits, chain reads, a burst of 503s from a
 * frozen RPC (each logged at error level with its request id), inbound events, indexer lag, the
 * metrics processor's last day, queue gauges, pool and memory.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { childPids, type Spawned, spawnCli, waitFor } from '../helpers/process.ts';
import { type Sample, sampleSum, scrape } from '../helpers/prometheus.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-metrics-'));
let pgDb: TestDatabase | undefined;
let service: Spawned | undefined;
let anvilPid: number | undefined;
afterAll(async () => {
  if (anvilPid) {
    try {
      process.kill(anvilPid, 'SIGCONT');
    } catch {}
  }
  if (service && service.child.exitCode === null) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
  await pgDb?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Credentials {
  partners: Array<{
    live: { api_key: string; inbound_secret: string; products: { active: string } };
  }>;
}

describe('the metrics endpoint of a running service', () => {
  it('reports requests, refusals, cache, chain reads, a 5xx burst, inbound, indexer, processor, queues, pool and memory', async () => {
    if (postgresAdminUrl()) {
      pgDb = await freshDatabase('postgres', { migrated: false });
      await pgDb.db.close();
    }
    const p = spawnCli(['start'], {
      DATA_DIR: dataDir,
      PORT: '0',
      LOCAL_CHAIN_PORT: '0',
      LOCAL_CHAIN_DAYS: '2',
      METRICS_PORT: '0',
      EMBED_RATE_LIMIT_PER_MINUTE: '10',
      LOG_LEVEL: 'info',
      ...(pgDb ? { DATABASE_URL: pgDb.location } : {}),
    });
    service = p;
    const url = await waitFor(
      () => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1],
      90_000,
      `listening (stderr: ${p.stderr()})`,
    );
    const metricsUrl = await waitFor(
      () => /Metrics on (http:\/\/\S+)/.exec(p.stdout())?.[1],
      5_000,
      'the metrics line',
    );
    expect(new URL(metricsUrl).port).not.toBe(new URL(url).port);
    expect(new URL(metricsUrl).hostname).toBe('127.0.0.1');
    // Not on the public port.
    expect((await fetch(`${url}/metrics`)).status).toBe(404);

    const credentialsFile = path.join(dataDir, 'demo-credentials.json');
    await waitFor(() => existsSync(credentialsFile) || undefined, 120_000, 'the demo credentials');
    const acme = (JSON.parse(readFileSync(credentialsFile, 'utf8')) as Credentials).partners[0]!
      .live;
    const get = (pathname: string, key: string | undefined = acme.api_key) =>
      fetch(`${url}${pathname}`, { headers: key ? { 'x-api-key': key } : {} });

    for (let i = 0; i < 3; i++) expect((await get('/api/partner/products')).status).toBe(200);
    expect((await get(`/api/partner/products/${acme.products.active}`)).status).toBe(200);
    expect((await get(`/api/partner/products/${acme.products.active}`)).status).toBe(200);
    expect((await get('/api/partner/products', 'pk_live_nope')).status).toBe(401);
    expect((await get('/no/such/route/abc-123')).status).toBe(404);
    const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
    const position = (n: number) =>
      get(`/api/partner/products/${acme.products.active}/position?address=${wallet(n)}`);
    expect((await position(1)).status).toBe(200);

    // The embed's per-address budget (10 a minute here): the 11th and 12th are refused.
    const embedStatuses: number[] = [];
    for (let i = 0; i < 12; i++)
      embedStatuses.push((await get('/embed/host.js', undefined)).status);
    expect(embedStatuses.filter((s) => s === 429).length).toBe(2);

    // Inbound: accepted, the same again (duplicate), a bad signature.
    const raw = JSON.stringify({ occurred_at: '2026-03-01T12:00:00Z', data: { n: 1 } });
    const inbound = (signature: string) =>
      fetch(`${url}/api/partner/webhooks/inbound`, {
        method: 'POST',
        headers: {
          'x-api-key': acme.api_key,
          'content-type': 'application/json',
          'x-service-event': 'ping',
          'idempotency-key': 'metrics-test-1',
          'x-service-signature': signature,
        },
        body: raw,
      });
    const signature = createHmac('sha256', acme.inbound_secret).update(raw).digest('hex');
    expect((await inbound(signature)).status).toBe(200);
    expect((await inbound(signature)).status).toBe(200);
    expect((await inbound('0'.repeat(64))).status).toBe(401);

    // A frozen RPC: the service's own anvil stopped (SIGSTOP). Each position read answers 503
    // chain_rpc_unavailable within the 2 s bound: a burst of 5xx.
    anvilPid = childPids(p.child.pid!, 'anvil')[0];
    expect(anvilPid).toBeGreaterThan(0);
    process.kill(anvilPid!, 'SIGSTOP');
    const burst: Array<{ status: number; ms: number; requestId: string | null; code: string }> = [];
    try {
      for (let n = 100; n < 104; n++) {
        const started = Date.now();
        const res = await position(n);
        const body = (await res.json()) as { code: string };
        burst.push({
          status: res.status,
          ms: Date.now() - started,
          requestId: res.headers.get('x-request-id'),
          code: body.code,
        });
      }
    } finally {
      process.kill(anvilPid!, 'SIGCONT');
    }
    for (const b of burst) {
      expect(b.status).toBe(503);
      expect(b.code).toBe('chain_rpc_unavailable');
      expect(b.ms).toBeLessThan(2000 + 1500); // the 2 s bound, plus a loaded machine's slack
    }

    // The worker reports the indexer's lag and the processor's last day once they ran.
    const ready = await waitFor(
      async () => {
        const s = await scrape(metricsUrl);
        const lag = sampleSum(s, 'indexer_head_lag_blocks');
        const day = sampleSum(s, 'metrics_last_finished_day_timestamp_seconds', {
          product: acme.products.active,
        });
        return lag !== undefined && day !== undefined ? s : undefined;
      },
      90_000,
      'indexer and processor figures',
    );
    const s: Sample[] = ready;
    const sum = (name: string, labels: Record<string, string> = {}) =>
      sampleSum(s, name, labels) ?? 0;

    expect(
      sum('http_requests_total', { route: '/api/partner/products', status: '200' }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      sum('http_requests_total', { route: '/api/partner/products/:slug', status: '200' }),
    ).toBeGreaterThanOrEqual(2);
    expect(sum('http_requests_total', { route: '/api/partner/products', status: '401' })).toBe(1);
    // Route templates, never URLs: the unknown path is one `unmatched` series.
    expect(
      sum('http_requests_total', { route: 'unmatched', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    const routes = new Set(s.filter((x) => x.labels.route).map((x) => x.labels.route));
    for (const r of routes) {
      expect(r).not.toContain('abc-123');
      expect(r).not.toContain(acme.products.active);
      expect(r).not.toContain('0x');
    }
    expect(
      sum('http_request_duration_seconds_count', {
        route: '/api/partner/products',
        status_class: '2xx',
      }),
    ).toBeGreaterThanOrEqual(3);
    // The 5xx burst.
    const positionRoute = '/api/partner/products/:slug/position';
    expect(sum('http_requests_total', { route: positionRoute, status: '503' })).toBe(4);
    expect(
      sum('http_request_duration_seconds_count', { status_class: '5xx' }),
    ).toBeGreaterThanOrEqual(4);
    expect(sum('rate_limit_refusals_total', { route: '/embed/host.js' })).toBe(2);
    expect(sum('read_cache_lookups_total', { result: 'hit' })).toBeGreaterThan(0);
    expect(sum('read_cache_lookups_total', { result: 'miss' })).toBeGreaterThan(0);
    expect(sum('chain_read_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sum('chain_read_failures_total')).toBe(4);
    expect(sum('inbound_events_total', { outcome: 'accepted' })).toBe(1);
    expect(sum('inbound_events_total', { outcome: 'duplicate' })).toBe(1);
    expect(sum('inbound_events_total', { outcome: 'signature_mismatch' })).toBe(1);
    const lag = s.find((x) => x.name === 'indexer_head_lag_blocks')!;
    expect(lag.labels.chain_id).toMatch(/^\d+$/);
    expect(lag.value).toBeGreaterThanOrEqual(0);
    expect(
      sampleSum(s, 'indexer_head_lag_seconds', { chain_id: lag.labels.chain_id! }),
    ).toBeDefined();
    const day = sum('metrics_last_finished_day_timestamp_seconds', {
      product: acme.products.active,
    });
    expect(day % 86_400).toBe(0);
    expect(day * 1000).toBeLessThanOrEqual(Date.now());
    expect(sampleSum(s, 'webhook_deliveries_pending')).toBeGreaterThanOrEqual(0);
    expect(sampleSum(s, 'webhook_events_pending')).toBeGreaterThanOrEqual(0);
    expect(sampleSum(s, 'webhook_oldest_pending_delivery_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleSum(s, 'inbound_events_unlinked')).toBeGreaterThanOrEqual(0);
    expect(sum('process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(sum('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    if (pgDb) {
      expect(sum('db_pool_max_connections')).toBe(10);
      expect(sum('db_pool_connections')).toBeGreaterThan(0);
      expect(sampleSum(s, 'db_pool_waiting_requests')).toBeGreaterThanOrEqual(0);
    }

    // Each 5xx is logged at error level with its request id.
    const errorLines = p
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; reqId?: string; statusCode?: number })
      .filter((l) => l.level >= 50 && l.statusCode === 503);
    for (const b of burst) {
      expect(errorLines.map((l) => l.reqId)).toContain(b.requestId);
    }

    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });
});
