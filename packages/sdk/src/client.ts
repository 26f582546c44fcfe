/**
 * The API client: one method per operation of the service's OpenAPI document (most generated from
 * it), each answering the `data` of the success envelope typed from the generated types, each
 * failure a PartnerYieldError to switch on by `code`. Retries follow the spec's policy (retry.ts).
 */
import { PartnerYieldError } from './errors.ts';
import { GeneratedReads, operationPath } from './generated/operations.ts';
import {
  createTransport,
  type RequestOptions,
  type Transport,
  type TransportOptions,
} from './http.ts';
import { type InboundEvent, signInbound } from './inbound.ts';
import type {
  EventsPage,
  EventsQuery,
  InboundAck,
  Liveness,
  Position,
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

/**
 * The client. Every keyed read of the API is a method generated from the document
 * (GeneratedReads, src/generated/operations.ts: listProducts, getProduct, getApyHistory,
 * getFeeStats, getYieldProjection, getProductHealth, and any read added later); the methods
 * below are the ones written by hand: the probes (no key), the signed inbound POST, and names kept
 * for compatibility.
 */
export class PartnerYieldClient extends GeneratedReads {
  readonly #request: Transport;
  readonly #inboundSecret: string | undefined;

  constructor(options: ClientOptions) {
    if (!options?.baseUrl) throw new TypeError('PartnerYieldClient needs a baseUrl.');
    const request = createTransport(options);
    super(request);
    this.#request = request;
    this.#inboundSecret = options.inboundSecret;
  }

  /**
   * Projected yield of `amount` (a decimal string in whole asset units) at the current net APY:
   * getYieldProjection under the name this client has always had.
   */
  calculateYield(
    slug: string,
    query: YieldCalcQuery,
    options?: RequestOptions,
  ): Promise<YieldProjection> {
    return this.getYieldProjection(slug, query, options);
  }

  /** A wallet's shares and their value in one product. */
  getPosition(slug: string, address: string, options?: RequestOptions): Promise<Position> {
    return this.read(operationPath('getPosition', { slug }), { address }, options);
  }

  /**
   * The events feed as an async iterator over its pages (`GET /api/partner/events`), each page
   * fetched when the loop asks for it. Newest first by default; with `order: 'oldest_first'` or a
   * forward `cursor` it pages forward and ends at the newest event stored: keep the last page's
   * `next_cursor` and start from it later to get only what was stored since (none missed, none
   * repeated). The same filters go with every page.
   *
   * ```ts
   * let cursor = savedCursor; // undefined the first time
   * for await (const page of client.iterateEvents({ cursor, order: cursor ? undefined : 'oldest_first' })) {
   *   for (const event of page.events) await apply(event);
   *   cursor = page.next_cursor ?? cursor;
   * }
   * ```
   */
  async *iterateEvents(
    query: EventsQuery = {},
    options?: RequestOptions,
  ): AsyncGenerator<EventsPage, void, undefined> {
    let q: EventsQuery = { ...query };
    for (;;) {
      const page = await this.listEvents(q, options);
      yield page;
      if (!page.has_more || page.next_cursor === null) return;
      const { order: _order, ...rest } = q;
      q = { ...rest, cursor: page.next_cursor };
    }
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
    if (event.idempotencyKey !== undefined && event.occurred_at === undefined) {
      // A resend of the event must be the same bytes; "now" would differ at every call, and the
      // service would answer the resend 409 idempotency_conflict instead of duplicate: true.
      throw new PartnerYieldError(
        'missing_occurred_at',
        'sendInbound with an idempotencyKey needs occurred_at too (when the event happened, kept with the key), so that sending the event again sends the same body and is answered duplicate: true.',
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
