/**
 * GET /api/partner/events: the outbound events of the key's partner and environment (every type of
 * the catalogue but test events), newest first or from a cursor forward, for catching up on missed
 * webhooks and reconciling. The rows are the stored events the webhooks send: each item's `id` is
 * the delivery's `webhook-id` and its `payload` is the stored JSON text spliced in unchanged, the
 * very bytes a delivery's body carries.
 *
 * Paging is by partner_seq, which becomes visible in the order it is given (migration 0042), so a
 * client paging forward while new events are stored misses none and sees none twice. The cursor is
 * opaque (docs/maintainers/decisions.md, "Events feed"): `e1.` + `a` (forward: after) or `d` (newest first:
 * before) + the position, base64url-encoded. Filters are not part of it; a client sends the same
 * filters with every page.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { EventsRepo, StoredEvent } from '../../db/events.ts';
import type { ProductsRepo } from '../../db/products.ts';
import { codeOfQueryParameter } from '../../http/error-mapping.ts';
import { ApiError } from '../../http/errors.ts';
import type { ReadCache } from '../../http/read-cache.ts';
import { sendCachedJsonText } from '../../http/read-cache.ts';
import { Ok } from '../../http/schemas.ts';
import { createTtlCache } from '../../http/ttl-cache.ts';
import { parseUtcDateTime } from '../../time-format.ts';
import { isOutboundEventType, SUBSCRIBABLE_EVENT_TYPES } from '../../webhooks/event-catalogue.ts';
import { partnerOf } from '../partner-identity.ts';
import { findOwnedProduct } from '../product-access.ts';

export const DEFAULT_EVENTS_RETENTION_DAYS = 30;
export const DEFAULT_EVENTS_LIMIT = 25;
export const MAX_EVENTS_LIMIT = 100;
const DAY_MS = 86_400_000;
/** Retention's lower bound moves by whole minutes, so cached pages keep their key for a minute. */
const RETENTION_STEP_MS = 60_000;

export const FeedEvent = Type.Object(
  {
    id: Type.String({
      pattern: '^evt_[0-9A-Za-z]+$',
      description:
        'The event id: the `webhook-id` / `X-Service-Event-Id` of its deliveries. Deduplicate on it.',
    }),
    type: Type.String({
      description:
        'The event type (`X-Service-Event`), one of the catalogue in the `webhooks` section.',
    }),
    product_slug: Type.Union([Type.String(), Type.Null()], {
      description: 'The product the event is about; null for an event of no product.',
    }),
    sequence: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description:
        "Strictly increasing per product: the delivery's `X-Service-Sequence`. Order a product's events by it; a gap means nothing (numbers can be skipped), a lower number than one already applied means an older event arriving late.",
    }),
    partner_sequence: Type.Integer({
      minimum: 1,
      description:
        'Strictly increasing over all events of your partner and environment: the order the feed lists them in (`X-Service-Partner-Sequence`).',
    }),
    occurred_at: Type.String({
      format: 'date-time',
      description: 'When it happened (block time for chain events), UTC.',
    }),
    created_at: Type.String({
      format: 'date-time',
      description: 'When the service stored it, and so began delivering it, UTC.',
    }),
    payload: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'The payload exactly as the webhook delivery sends it (its schema per type is in the `webhooks` section).',
      },
    ),
  },
  { title: 'FeedEvent', additionalProperties: false },
);

export const EventsPage = Type.Object(
  {
    events: Type.Array(FeedEvent),
    has_more: Type.Boolean({
      description:
        'More events follow in this order now (forward: more are already stored; ask again at once).',
    }),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description:
        'The next page in the same order. Forward: never null: after the last event listed (or where the request was when none), ask again later for events stored since. Newest first: null at the end.',
    }),
    forward_cursor: Type.Union([Type.String(), Type.Null()], {
      description:
        'Newest-first pages: a cursor that pages forward from the newest event listed (or from now, on a first page with no events), to follow new events from here on. Null on forward pages (use next_cursor).',
    }),
  },
  { title: 'EventsPage', additionalProperties: false },
);

type Order = 'asc' | 'desc';

export function encodeCursor(order: Order, position: bigint): string {
  return Buffer.from(`e1.${order === 'asc' ? 'a' : 'd'}.${position}`, 'utf8').toString('base64url');
}

const MAX_POSITION = 2n ** 63n - 1n;

export function decodeCursor(raw: string): { order: Order; position: bigint } {
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(raw)
    ? Buffer.from(raw, 'base64url').toString('utf8')
    : '';
  const m = /^e1\.([ad])\.(0|[1-9][0-9]{0,18})$/.exec(text);
  const position = m ? BigInt(m[2] as string) : -1n;
  // Positions are PostgreSQL bigints: 19 digits can exceed them (a 500 before).
  if (!m || position > MAX_POSITION) throw new ApiError('invalid_cursor');
  return { order: m[1] === 'a' ? 'asc' : 'desc', position };
}

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_EVENTS_LIMIT;
  if (!/^[1-9][0-9]{0,2}$/.test(raw) || Number(raw) > MAX_EVENTS_LIMIT) {
    throw new ApiError('invalid_limit');
  }
  return Number(raw);
}

/** The same strict form as an inbound event's occurred_at: a real day and time, years 0001–9999. */
function parseTime(raw: string | undefined, name: string): Date | undefined {
  if (raw === undefined) return undefined;
  const time = parseUtcDateTime(raw);
  if (!time) {
    throw new ApiError(
      'invalid_time',
      `${name} must be an ISO 8601 UTC date-time on a real calendar day, such as 2026-03-01T00:00:00Z.`,
    );
  }
  return time;
}

/**
 * A time filter under either of its names (ours, or the one DECISIONS gives it), with the name it
 * came under; both at once is invalid_time, so no value is silently dropped.
 */
function oneOf<Q extends Record<string, string | undefined>>(
  query: Q,
  name: keyof Q & string,
  alias: keyof Q & string,
): [string | undefined, string] {
  const value = query[name];
  const aliased = query[alias];
  if (value !== undefined && aliased !== undefined) {
    throw new ApiError('invalid_time', `Give ${name} or ${alias} (the same filter), not both.`);
  }
  return aliased !== undefined ? [aliased, alias] : [value, name];
}

function parseTypes(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const types = [...new Set(raw.split(',').map((t) => t.trim()))];
  for (const t of types) {
    if (!isOutboundEventType(t) || !(SUBSCRIBABLE_EVENT_TYPES as string[]).includes(t)) {
      throw new ApiError(
        'unknown_event',
        `type: "${t.slice(0, 60)}" is not a listed event type (${SUBSCRIBABLE_EVENT_TYPES.join(', ')}).`,
      );
    }
  }
  return types.sort();
}

/** One event as JSON text: the stored payload text spliced in unchanged. */
function eventJson(e: StoredEvent, slugOf: (productId: string) => string | null): string {
  const meta = JSON.stringify({
    id: e.id,
    type: e.eventType,
    product_slug: e.productId === null ? null : slugOf(e.productId),
    sequence: e.productSeq === null ? null : Number(e.productSeq),
    partner_sequence: Number(e.partnerSeq),
    occurred_at: e.occurredAt.toISOString(),
    created_at: e.createdAt.toISOString(),
  });
  return `${meta.slice(0, -1)},"payload":${e.payload}}`;
}

export function eventsRoute(deps: {
  cache: ReadCache;
  products: ProductsRepo;
  events: EventsRepo;
  retentionDays: number;
  now?: () => Date;
  /** How long the newest partner_seq read is reused (default 1 s; 0 reads it per request). */
  freshnessMs?: number;
}): FastifyPluginAsyncTypebox {
  const now = deps.now ?? (() => new Date());
  // The newest number, read at most once a second per partner environment: a page is at most that
  // far behind the newest event (the next request sees it; nothing is skipped), and the request
  // path does no database round trip on a cache hit (figures in docs/maintainers/decisions.md, "Events feed").
  const newest = createTtlCache<bigint>(deps.freshnessMs ?? 1_000, 10_000);
  return async (app) => {
    app.get(
      '/api/partner/events',
      {
        schema: {
          operationId: 'listEvents',
          summary: 'List events',
          description:
            "The events sent to your webhook destinations (every type of the `webhooks` section but the test event `ping`) of your partner and the key's environment, stored within the retention window (`EVENTS_FEED_RETENTION_DAYS`, default 30 days): the same `id` and the same payload as the deliveries. Newest first by default; `order=oldest_first` or a forward cursor pages forward, missing none and repeating none while new events arrive. Use it to catch up after an outage of your receiver and to reconcile.",
          tags: ['Events'],
          querystring: Type.Object({
            cursor: Type.Optional(
              Type.String({
                description:
                  "Opaque: a previous page's `next_cursor` or `forward_cursor`. It carries the order and the position, not the filters: send the same filters again.",
              }),
            ),
            order: Type.Optional(
              Type.String({
                description:
                  'Without a cursor: `newest_first` (default) or `oldest_first` (from the oldest event retained, forward); anything else is 400 `invalid_order`. With a cursor it may be left out; if given it must be the cursor’s.',
              }),
            ),
            limit: Type.Optional(
              Type.String({ description: 'Events per page, 1 to 100; default 25.' }),
            ),
            type: Type.Optional(
              Type.String({
                description:
                  'Only these event types, comma-separated (e.g. `deposit.confirmed,vault_pause`).',
              }),
            ),
            product: Type.Optional(
              Type.String({ description: 'Only the events of this product (its slug).' }),
            ),
            occurred_since: Type.Optional(
              Type.String({
                description:
                  'Only events that occurred at or after this UTC date-time (ISO 8601 with `Z`).',
              }),
            ),
            occurred_before: Type.Optional(
              Type.String({
                description:
                  'Only events that occurred before this UTC date-time (ISO 8601 with `Z`).',
              }),
            ),
            since: Type.Optional(
              Type.String({
                description:
                  "DECISIONS' name of `occurred_since` (the same filter); give one of the two.",
              }),
            ),
            until: Type.Optional(
              Type.String({
                description:
                  "DECISIONS' name of `occurred_before` (the same filter: before this time, exclusive); give one of the two.",
              }),
            ),
          }),
          response: { 200: Ok(EventsPage) },
        },
        config: {
          cacheControl: 'private, max-age=5',
          // A parameter sent twice fails the schema (one string each): its own code, not the
          // inbound body's invalid_payload.
          validationErrorCode: codeOfQueryParameter(
            {
              cursor: 'invalid_cursor',
              order: 'invalid_order',
              limit: 'invalid_limit',
              type: 'unknown_event',
              occurred_since: 'invalid_time',
              occurred_before: 'invalid_time',
              since: 'invalid_time',
              until: 'invalid_time',
            },
            'malformed_request',
          ),
          errorCodes: [
            'invalid_cursor',
            'invalid_order',
            'invalid_limit',
            'invalid_time',
            'unknown_event',
            'not_found',
            'not_owned',
          ],
        },
      },
      async (request, reply) => {
        const caller = partnerOf(request);
        const q = request.query;
        const limit = parseLimit(q.limit);
        const types = parseTypes(q.type);
        const occurredSince = parseTime(...oneOf(q, 'occurred_since', 'since'));
        const occurredBefore = parseTime(...oneOf(q, 'occurred_before', 'until'));
        if (occurredSince && occurredBefore && occurredSince >= occurredBefore) {
          throw new ApiError('invalid_time', 'occurred_since must be before occurred_before.');
        }
        if (q.order !== undefined && q.order !== 'newest_first' && q.order !== 'oldest_first') {
          throw new ApiError('invalid_order');
        }
        const requested: Order | undefined =
          q.order === undefined ? undefined : q.order === 'oldest_first' ? 'asc' : 'desc';
        const cursor = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
        if (cursor && requested && cursor.order !== requested) {
          throw new ApiError(
            'invalid_cursor',
            `This cursor pages ${cursor.order === 'asc' ? 'oldest_first' : 'newest_first'}.`,
          );
        }
        const order: Order = cursor?.order ?? requested ?? 'desc';
        const product =
          q.product === undefined
            ? undefined
            : await findOwnedProduct(deps.products, caller, q.product);

        const t = now().getTime();
        const storedSince = new Date(
          Math.floor((t - deps.retentionDays * DAY_MS) / RETENTION_STEP_MS) * RETENTION_STEP_MS,
        );
        // The newest number given so far keys the cache: a new event makes a new key (within the
        // freshness above), and a page read under a key can only lack events stored after it
        // (none are missed: a forward page ends where it ends, and the next one starts there).
        const last = await newest.get(`${caller.partnerId}:${caller.environment}`, () =>
          deps.events.lastPartnerSeq(caller.partnerId, caller.environment),
        );
        const key = [
          'events',
          caller.partnerId,
          caller.environment,
          last,
          storedSince.getTime(),
          order,
          cursor?.position ?? '',
          limit,
          types?.join(',') ?? '',
          product?.id ?? '',
          occurredSince?.getTime() ?? '',
          occurredBefore?.getTime() ?? '',
        ].join(':');
        await sendCachedJsonText(deps.cache, request, reply, key, async () => {
          const rows = await deps.events.feed({
            partnerId: caller.partnerId,
            environment: caller.environment,
            order,
            ...(order === 'asc'
              ? { after: cursor?.position ?? 0n }
              : cursor
                ? { before: cursor.position }
                : {}),
            ...(types ? { types } : {}),
            ...(product ? { productId: product.id } : {}),
            ...(occurredSince ? { occurredSince } : {}),
            ...(occurredBefore ? { occurredBefore } : {}),
            storedSince,
            limit: limit + 1,
          });
          const hasMore = rows.length > limit;
          const page = rows.slice(0, limit);
          const slugs = new Map<string, string | null>();
          if (product) slugs.set(product.id, product.slug);
          for (const e of page) {
            if (e.productId !== null && !slugs.has(e.productId)) {
              slugs.set(e.productId, (await deps.products.getById(e.productId))?.slug ?? null);
            }
          }
          const lastListed = page.at(-1)?.partnerSeq ?? null;
          let nextCursor: string | null;
          let forwardCursor: string | null = null;
          if (order === 'asc') {
            nextCursor = encodeCursor('asc', lastListed ?? cursor?.position ?? 0n);
          } else {
            nextCursor = hasMore && lastListed !== null ? encodeCursor('desc', lastListed) : null;
            const newest = page[0]?.partnerSeq ?? null;
            forwardCursor =
              newest !== null
                ? encodeCursor('asc', newest)
                : cursor
                  ? null
                  : encodeCursor('asc', last);
          }
          const events = page.map((e) => eventJson(e, (id) => slugs.get(id) ?? null));
          return `{"success":true,"data":{"events":[${events.join(',')}],"has_more":${hasMore},"next_cursor":${JSON.stringify(nextCursor)},"forward_cursor":${JSON.stringify(forwardCursor)}}}`;
        });
        return reply;
      },
    );
  };
}
