/**
 * The API client: one method per operation of the service's OpenAPI document, each answering the
 * `data` of the success envelope typed from the generated types, each failure a PartnerYieldError
 * to switch on by `code`. Retries follow the spec's policy (retry.ts).
 */
import { PartnerYieldError } from './errors.ts';
import {
  createTransport,
  type RequestOptions,
  type Transport,
  type TransportOptions,
} from './http.ts';
import { type InboundEvent, signInbound } from './inbound.ts';
import { operationPath } from './operations.ts';
import type {
  ApyHistoryQuery,
  ApyHistoryRow,
  FeeStatsQuery,
  FeeStatsRow,
  InboundAck,
  Liveness,
  Position,
  Product,
  ProductHealth,
  Readiness,
  YieldCalcQuery,
  YieldProjection,
} from './types.ts';

export interface ClientOptions extends Omit<TransportOptions, 'baseUrl'> {
  /** The service's base address, e.g. `https://api.example.com` or `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** `svc_live_…` or `svc_test_…`. */
  apiKey?: string;
  /** The inbound secret (`whsec_…`) of the key's environment, for sendInbound. */
  inboundSecret?: string;
}

export class PartnerYieldClient {
  readonly #request: Transport;
  readonly #inboundSecret: string | undefined;

  constructor(options: ClientOptions) {
    if (!options?.baseUrl) throw new TypeError('PartnerYieldClient needs a baseUrl.');
    this.#request = createTransport(options);
    this.#inboundSecret = options.inboundSecret;
  }

  async #get<T>(
    path: string,
    query?: Record<string, string | number | undefined>,
    o?: RequestOptions,
  ) {
    const res = await this.#request({ method: 'GET', path, query }, o);
    return (res.body as { data: T }).data;
  }

  /** Every product of the key's partner and environment. */
  listProducts(options?: RequestOptions): Promise<Product[]> {
    return this.#get(operationPath('listProducts'), undefined, options);
  }

  /** One product, in any state. */
  getProduct(slug: string, options?: RequestOptions): Promise<Product> {
    return this.#get(operationPath('getProduct', { slug }), undefined, options);
  }

  /** Daily APYs, newest first (`days`: 7, 30 or 180; default 30). */
  getApyHistory(
    slug: string,
    query?: ApyHistoryQuery,
    options?: RequestOptions,
  ): Promise<ApyHistoryRow[]> {
    return this.#get(operationPath('getApyHistory', { slug }), query, options);
  }

  /** Daily yield and fee split, oldest first (UTC dates, inclusive; default the last 30 days). */
  getFeeStats(
    slug: string,
    query?: FeeStatsQuery,
    options?: RequestOptions,
  ): Promise<FeeStatsRow[]> {
    return this.#get(operationPath('getFeeStats', { slug }), query, options);
  }

  /** Projected yield of `amount` (a decimal string in whole asset units) at the current net APY. */
  calculateYield(
    slug: string,
    query: YieldCalcQuery,
    options?: RequestOptions,
  ): Promise<YieldProjection> {
    return this.#get(operationPath('getYieldProjection', { slug }), query, options);
  }

  /** Pause state, upstream state and last block: gate the deposit button on it. */
  getProductHealth(slug: string, options?: RequestOptions): Promise<ProductHealth> {
    return this.#get(operationPath('getProductHealth', { slug }), undefined, options);
  }

  /** A wallet's shares and their value in one product. */
  getPosition(slug: string, address: string, options?: RequestOptions): Promise<Position> {
    return this.#get(operationPath('getPosition', { slug }), { address }, options);
  }

  /** The liveness probe (no key needed). */
  async health(options?: RequestOptions): Promise<Liveness> {
    const res = await this.#request(
      { method: 'GET', path: operationPath('getLiveness'), auth: false },
      options,
    );
    return (res.body as { data: Liveness }).data;
  }

  /**
   * The readiness probe (no key needed): resolves once the service can serve partner requests;
   * rejects with `service_unavailable` naming the part that is not ready otherwise.
   */
  async ready(options?: RequestOptions): Promise<Readiness> {
    const res = await this.#request(
      { method: 'GET', path: operationPath('getReadiness'), auth: false },
      options,
    );
    return (res.body as { data: Readiness }).data;
  }

  /**
   * Pushes an event to the service's inbound endpoint, signed with the inbound secret. The body is
   * serialised once, so every retry sends the same bytes under the same Idempotency-Key.
   */
  async sendInbound(
    event: InboundEvent,
    options?: RequestOptions & { secret?: string },
  ): Promise<InboundAck> {
    const secret = options?.secret ?? this.#inboundSecret;
    if (!secret) {
      throw new PartnerYieldError(
        'missing_inbound_secret',
        'sendInbound needs the inbound secret (client option inboundSecret).',
      );
    }
    const occurred = event.occurred_at ?? new Date();
    const body = JSON.stringify({
      occurred_at: occurred instanceof Date ? occurred.toISOString() : occurred,
      data: event.data,
    });
    const res = await this.#request(
      {
        method: 'POST',
        path: operationPath('postInboundEvent'),
        headers: {
          'content-type': 'application/json',
          'idempotency-key': event.idempotencyKey ?? globalThis.crypto.randomUUID(),
          'x-service-event': event.type,
          'x-service-signature': await signInbound(body, secret),
        },
        body,
      },
      options,
    );
    return res.body as InboundAck;
  }
}
