/// <reference types="node" />
/**
 * `@partner-yield/sdk/testing`: what a partner's own test suite needs to test its integration
 * without the service (Node only; the rest of the SDK runs anywhere):
 * - `signTestWebhook`: a delivery signed exactly as the service signs one (X-Service-Signature and
 *   the Standard Webhooks headers), for the partner's receiver to verify with `verifyWebhook`;
 * - `startMockApi`: a small HTTP server answering the partner API's reads with typed fixtures (the
 *   shapes of the OpenAPI document; the SDK's type-check fails when they drift), in the service's
 *   envelope, with the key check, 404 for an unknown product, and scripted failures (`failNext`)
 *   to test retries and error handling.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fromBase64, hmacSha256, toBase64, toHex, utf8 } from '../crypto.ts';
import type { components } from '../generated/openapi.ts';
import { OPERATIONS, type OperationId } from '../generated/operations.ts';

type Schemas = components['schemas'];

export interface SignedTestWebhook {
  /** The exact bytes to POST (the signature covers them). */
  body: string;
  /** Every header the service sends with a delivery. */
  headers: Record<string, string>;
}

/**
 * Signs `payload` as the service signs a delivery of event `type` to a destination whose secret is
 * `secret` (the `whsec_…` string): the body is `JSON.stringify(payload)`.
 */
export async function signTestWebhook(options: {
  secret: string;
  type: string;
  payload: unknown;
  /** The event id (`webhook-id`, `X-Service-Event-Id`). Default a random `evt_test_…`. */
  id?: string;
  /** When it was signed. Default now. */
  timestamp?: Date;
}): Promise<SignedTestWebhook> {
  const { secret, type } = options;
  const key = secret.startsWith('whsec_') ? fromBase64(secret.slice(6)) : undefined;
  if (!key || key.length === 0) {
    throw new TypeError('signTestWebhook needs a destination secret (whsec_…).');
  }
  const body = JSON.stringify(options.payload);
  const id = options.id ?? `evt_test_${Math.random().toString(36).slice(2, 14)}`;
  const seconds = Math.floor((options.timestamp ?? new Date()).getTime() / 1000);
  const service = toHex(await hmacSha256(utf8(secret), utf8(body)));
  const standard = toBase64(await hmacSha256(key, utf8(`${id}.${seconds}.${body}`)));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-service-event': type,
      'x-service-event-id': id,
      'x-service-signature': service,
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': `v1,${standard}`,
    },
  };
}

/** What the mock answers, per product slug. Every field has a default (`defaultFixtures`). */
export interface MockFixtures {
  products: Schemas['Product'][];
  apyHistory: Record<string, Schemas['ApyHistoryRow'][]>;
  feeStats: Record<string, Schemas['FeeStatsRow'][]>;
  health: Record<string, Schemas['Health']>;
  feeSchedule: Record<string, Schemas['FeeSchedule']>;
  /**
   * By slug, then wallet address (lowercase); an address not listed holds nothing.
   * `pending_redeems` is derived from `redeem_requests`, as the service does.
   */
  positions: Record<
    string,
    Record<string, Omit<Schemas['Position'], 'wallet_address' | 'product_slug' | 'pending_redeems'>>
  >;
}

const SLUG = 'acme-usdc-core';

/** Base units of a 6-decimal asset as the API writes them. */
const usdc = (units: bigint) => {
  const s = units.toString().padStart(7, '0');
  return `${s.slice(0, -6)}.${s.slice(-6)}`;
};

/** A product with 30 days of history, its health, fee schedule and one wallet's position. */
export function defaultFixtures(): MockFixtures {
  const days = Array.from({ length: 30 }, (_, i) => {
    const d = new Date(Date.UTC(2026, 10, 26) - i * 86_400_000);
    return d.toISOString().slice(0, 10);
  });
  return {
    products: [
      {
        slug: SLUG,
        display_name: 'Acme USDC Core',
        partner: 'Acme Wallet',
        status: 'active',
        risk_label: 'low',
        chain: 'Local',
        chain_id: 31337,
        asset_symbol: 'USDC',
        asset_decimals: 6,
        asset_address: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
        underlying_vault_address: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
        engine_contract_address: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
        service_fee_bps: 500,
        partner_fee_bps: 1000,
        latest_metrics: {
          as_of_date: days[0]!,
          engine_total_assets: '1250000.000000',
          underlying_apy: '0.062000',
          net_apy_for_user: '0.052700',
          apy_basis: 'engine',
          net_apy_7d: '0.052600',
          net_apy_30d: '0.052500',
          underlying_apy_7d: '0.061900',
          underlying_apy_30d: '0.061800',
        },
      },
    ],
    apyHistory: {
      [SLUG]: days.map((date, i) => ({
        date,
        underlying_apy: '0.062000',
        net_apy_for_user: '0.052700',
        // Null until the window has data, as the API says (the oldest rows of the 30 days).
        net_apy_7d: i < 23 ? '0.052600' : null,
        net_apy_30d: i === 0 ? '0.052500' : null,
        underlying_apy_7d: i < 23 ? '0.061900' : null,
        underlying_apy_30d: i === 0 ? '0.061800' : null,
      })),
    },
    feeStats: {
      [SLUG]: days.map((date, i) => ({
        date,
        engine_total_assets: '1250000.000000',
        daily_yield_assets: '212.328767',
        net_apy_for_user: '0.052700',
        daily_service_fee_earned: '10.616438',
        daily_partner_fee_earned: '21.232877',
        cumulative_service_fee_minted: usdc(10_616_438n * BigInt(30 - i)),
        cumulative_partner_fee_minted: usdc(21_232_877n * BigInt(30 - i)),
        cumulative_service_fee_earned: usdc(10_616_438n * BigInt(30 - i)),
        cumulative_partner_fee_earned: usdc(21_232_877n * BigInt(30 - i)),
      })),
    },
    health: {
      [SLUG]: { is_paused: false, underlying_ok: true, last_block: 1_000_000, notes: '' },
    },
    feeSchedule: {
      [SLUG]: {
        service_fee_bps: 500,
        partner_fee_bps: 1000,
        scheduled_change: null,
        last_block: 1_000_000,
      },
    },
    positions: {
      [SLUG]: {
        '0x70997970c51812dc3a010c7d01b50e0d17dc79c8': {
          shares: '1000.000000000000',
          assets: '1052.700000',
          usd_value: '1052.70',
          redeem_requests: [],
        },
      },
    },
  };
}

export interface MockApi {
  /** Base URL to give the client (`http://127.0.0.1:<port>`). */
  url: string;
  fixtures: MockFixtures;
  /** The requests received, in order. */
  requests: Array<{ method: string; path: string; headers: IncomingMessage['headers'] }>;
  /** The next `times` calls of `operationId` answer this error (then the fixtures again). */
  failNext(
    operationId: OperationId,
    error: { status: number; code: Schemas['Error']['code']; retryAfter?: string },
    times?: number,
  ): void;
  close(): Promise<void>;
}

interface Failure {
  status: number;
  code: string;
  retryAfter?: string;
  times: number;
}

const ROUTES = (Object.keys(OPERATIONS) as OperationId[]).map((id) => ({
  id,
  method: OPERATIONS[id].method as string,
  pattern: new RegExp(`^${OPERATIONS[id].path.replace(/\{\w+\}/g, '([^/]+)')}$`),
}));

/** A non-negative decimal string as an integer scaled by 10^SCALE_DIGITS (truncated). */
const SCALE_DIGITS = 30;
const SCALE = 10n ** BigInt(SCALE_DIGITS);
function scaled(value: string): bigint {
  const [i = '0', f = ''] = value.split('.');
  return BigInt(`${i}${f.padEnd(SCALE_DIGITS, '0').slice(0, SCALE_DIGITS)}`);
}

/** ⌊x^(1/n)⌋ of a non-negative bigint (Newton's method). */
function integerRoot(x: bigint, n: bigint): bigint {
  if (x < 2n) return x;
  let r = 1n << (BigInt(x.toString(2).length) / n + 1n);
  for (;;) {
    const next = ((n - 1n) * r + x / r ** (n - 1n)) / n;
    if (next >= r) return r;
    r = next;
  }
}

/** A scaled amount written with `decimals` places, toward zero. */
function written(value: bigint, decimals: number): string {
  const units = value / 10n ** BigInt(SCALE_DIGITS - decimals);
  const s = units.toString().padStart(decimals + 1, '0');
  return decimals === 0 ? s : `${s.slice(0, -decimals)}.${s.slice(-decimals)}`;
}

/** The API's projection (yield-calc): principal × apy a year, × ((1 + apy)^(1/12) − 1) a month. */
function projection(amount: string, apy: string, decimals: number) {
  const principal = scaled(amount);
  const rate = scaled(apy);
  const monthlyFactor = integerRoot((SCALE + rate) * SCALE ** 11n, 12n) - SCALE;
  return {
    annual_yield: written((principal * rate) / SCALE, decimals),
    monthly_yield: written((principal * monthlyFactor) / SCALE, decimals),
  };
}

/**
 * Starts the mock on 127.0.0.1 (`port` 0: a free one). `apiKey`: the only key it accepts (default:
 * any non-empty key). `fixtures`: replaces the defaults field by field.
 */
export async function startMockApi(
  options: { apiKey?: string; fixtures?: Partial<MockFixtures>; port?: number } = {},
): Promise<MockApi> {
  const fixtures: MockFixtures = { ...defaultFixtures(), ...options.fixtures };
  const requests: MockApi['requests'] = [];
  const failures = new Map<OperationId, Failure>();

  const send = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': `req_mock_${requests.length}`,
      ...headers,
    });
    res.end(JSON.stringify(body));
  };
  const error = (
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
    headers = {},
  ) => send(res, status, { success: false, code, message }, headers);

  function answer(id: OperationId, slug: string | undefined, query: URLSearchParams): unknown {
    const product = fixtures.products.find((p) => p.slug === slug);
    switch (id) {
      case 'listProducts':
        return fixtures.products;
      case 'getProduct':
        return product;
      case 'getApyHistory': {
        const days = Number(query.get('days') ?? 30);
        return (fixtures.apyHistory[slug!] ?? []).slice(0, days);
      }
      case 'getFeeStats':
        return fixtures.feeStats[slug!] ?? [];
      case 'getProductHealth':
        return fixtures.health[slug!];
      case 'getFeeSchedule':
        return fixtures.feeSchedule[slug!];
      case 'getPosition': {
        const wallet = (query.get('address') ?? '').toLowerCase();
        const held = fixtures.positions[slug!]?.[wallet];
        return {
          wallet_address: query.get('address'),
          product_slug: slug,
          shares: held?.shares ?? '0',
          assets: held?.assets ?? '0',
          usd_value: held?.usd_value ?? '0.00',
          pending_redeems: (held?.redeem_requests ?? []).map((r) => ({
            request_id: r.request_id,
            shares: r.shares,
            status: r.status,
            claimable_at: r.estimated_claimable_at ?? r.claimable_since,
          })),
          redeem_requests: held?.redeem_requests ?? [],
        };
      }
      case 'getYieldProjection': {
        const amount = query.get('amount') ?? '0';
        const window = query.get('apy_window') ?? '1d';
        const m = product?.latest_metrics;
        const apy =
          (window === '7d'
            ? m?.net_apy_7d
            : window === '30d'
              ? m?.net_apy_30d
              : m?.net_apy_for_user) ?? '0';
        return {
          principal: amount,
          net_apy_for_user: apy,
          apy_basis: window === '1d' ? (m?.apy_basis ?? 'engine') : 'engine',
          apy_window: window,
          ...projection(amount, apy, product?.asset_decimals ?? 6),
        };
      }
      default:
        return undefined;
    }
  }

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://mock');
    requests.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers });
    req.resume();
    if (url.pathname === '/health')
      return send(res, 200, { success: true, data: { status: 'ok' } });
    const route = ROUTES.find((r) => r.method === req.method && r.pattern.test(url.pathname));
    if (!route) return error(res, 404, 'not_found', 'No such route.');
    const key = req.headers['x-api-key'];
    if (route.id !== 'getReadiness') {
      if (!key) return error(res, 401, 'missing_api_key', 'Send your key in X-Api-Key.');
      if (options.apiKey !== undefined && key !== options.apiKey) {
        return error(res, 401, 'invalid_api_key', 'The key is not valid.');
      }
    }
    const failure = failures.get(route.id);
    if (failure && failure.times > 0) {
      failure.times--;
      return error(
        res,
        failure.status,
        failure.code,
        `Scripted failure: ${failure.code}.`,
        failure.retryAfter ? { 'retry-after': failure.retryAfter } : {},
      );
    }
    const slug = route.pattern.exec(url.pathname)?.[1];
    const decoded = slug === undefined ? undefined : decodeURIComponent(slug);
    if (decoded !== undefined && !fixtures.products.some((p) => p.slug === decoded)) {
      return error(res, 404, 'not_found', 'No product with that slug for this key.');
    }
    if (route.id === 'getReadiness') {
      return send(res, 200, {
        success: true,
        data: {
          status: 'ready',
          database: 'ok',
          redis: 'not_configured',
          chains: 'ok',
          demo: 'off',
        },
      });
    }
    if (route.id === 'postInboundEvent') {
      return send(res, 200, { success: true, event_id: requests.length, duplicate: false });
    }
    const data = answer(route.id, decoded, url.searchParams);
    if (data === undefined) return error(res, 404, 'not_found', 'No fixture for this product.');
    return send(res, 200, { success: true, data });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    fixtures,
    requests,
    failNext(operationId, e, count = 1) {
      failures.set(operationId, { ...e, times: count });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
