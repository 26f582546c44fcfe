/**
 * The embed, served by the api role under /embed (DECISIONS, "Embed"):
 *
 * - `GET /embed/{embed_id}/{slug}`: the page a partner iframes. The embed id is public (it names a
 *   partner environment and grants nothing); no API key ever reaches a browser. The page answers
 *   with `Content-Security-Policy: frame-ancestors` listing exactly the environment's allowed
 *   origins. Only the environment's own deployed products are offered (pending: not found).
 * - `GET /embed/api/{embed_id}/{slug}`: the same product view as JSON, for a refresh.
 * - `POST /embed/api/{embed_id}/{slug}/transactions`: the app reports a deposit or redeem it
 *   broadcast; stored like an inbound `deposit.submitted` / `redeem.submitted`, so it links to the
 *   lifecycle event of its log exactly as a partner-submitted one does.
 * - `GET /embed/host.js`, `GET /embed/assets/*`: the host helper and the app's built files.
 * - `GET /embed/host-example/{embed_id}/{slug}`: a page that frames the embed with the host
 *   helper (the demo's one-click example; it must be opened from an allowed origin).
 *
 * Embed traffic carries no key, so it never counts against a partner's API budget; it is limited
 * per client address instead (EMBED_RATE_LIMIT_PER_MINUTE), assets excepted.
 */

import { randomBytes } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { ChainClient } from '../chain/client.ts';
import { permitRouterAddress } from '../chain/permit-router.ts';
import {
  readScheduledFeeChange,
  type ScheduledFeeChange,
} from '../chain/read-scheduled-fee-change.ts';
import type { EmbedSettings, EmbedSettingsRepo } from '../db/embed-settings.ts';
import type { InboundEventsRepo } from '../db/inbound-events.ts';
import type { Product, ProductsRepo } from '../db/products.ts';
import type { SnapshotReads } from '../db/snapshot-reads.ts';
import type { ChainReader, HealthReading } from '../http/chain-reader.ts';
import { acceptsGzip } from '../http/content-encoding.ts';
import { ApiError } from '../http/errors.ts';
import {
  createFallbackCounter,
  createMemoryCounter,
  rateLimitStore,
} from '../http/fixed-window.ts';
import type { ReadCache } from '../http/read-cache.ts';
import { createTtlCache, type TtlCache } from '../http/ttl-cache.ts';
import { isId } from '../ids.ts';
import type { Redis } from '../redis.ts';
import { sha256 } from '../sha256.ts';
import { dataError } from '../webhooks/inbound-schemas.ts';
import type { EmbedAssets } from './assets.ts';
import { ERROR_PAGE_CSP, embedCsp, hostExampleCsp } from './csp.ts';
import { renderHostExample } from './host-example.ts';
import { parseAccent, parseTheme, renderEmbedPage } from './page.ts';
import { buildProductView, type EmbedProductView } from './product-view.ts';

export const EMBED_PREFIX = '/embed';
const SLUG = /^[a-z0-9][a-z0-9-]{1,62}$/;

/** Checked in resolve(): a malformed id or slug names nothing, so it is a 404 like an unknown one. */
const Params = Type.Object({ embedId: Type.String(), slug: Type.String() });

const PageQuery = Type.Object({
  theme: Type.Optional(Type.String({ maxLength: 10 })),
  accent: Type.Optional(Type.String({ maxLength: 10 })),
  bridge: Type.Optional(Type.String({ maxLength: 5 })),
  origin: Type.Optional(Type.String({ maxLength: 300 })),
});

const TransactionBody = Type.Object(
  {
    kind: Type.Union([Type.Literal('deposit'), Type.Literal('redeem')]),
    tx_hash: Type.String(),
    user_address: Type.String(),
    amount: Type.Optional(Type.String()),
    shares: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export interface EmbedPluginOptions {
  products: Pick<ProductsRepo, 'getBySlug'>;
  snapshots: Pick<SnapshotReads, 'latestFor'>;
  chain: Pick<ChainReader, 'readHealth'>;
  /** The chain's client for reads the API does not make (the scheduled fee change); absent: none. */
  clientFor?: (chainId: number) => ChainClient | undefined;
  chainName: (chainId: number) => string;
  cache: Pick<ReadCache, 'get'>;
  settings: Pick<EmbedSettingsRepo, 'findByEmbedId'>;
  events: Pick<InboundEventsRepo, 'store'>;
  redis?: Redis | undefined;
  /** Requests per client address per minute (assets excepted). */
  ratePerMinute: number;
  /** Clock of the per-address windows (tests pin it; Redis counts by its own clock). */
  rateClock?: () => number;
  /** The built app; undefined when it was not built (pages then answer 503 saying so). */
  assets: EmbedAssets | undefined;
  /** Public URL of the embed (`…/embed`), for the host example; by default the request's own. */
  publicUrl?: () => string | undefined;
  now?: () => Date;
}

type PluginState = EmbedPluginOptions & {
  feeChanges: TtlCache<ScheduledFeeChange | null>;
  /** Per chain: the permit deposit router's address when it has code there, else null. */
  routers: TtlCache<string | null>;
};

/** The partner environment and its deployed product, or not_found for anything else. */
async function resolve(
  opts: EmbedPluginOptions,
  embedId: string,
  slug: string,
): Promise<{ settings: EmbedSettings; product: Product }> {
  if (!isId('emb', embedId) || !SLUG.test(slug)) {
    throw new ApiError('not_found', 'No such embed product.');
  }
  const settings = await opts.cache.get(`embed:${embedId}`, () =>
    opts.settings.findByEmbedId(embedId),
  );
  const product = settings && (await opts.products.getBySlug(slug));
  // Another environment's product, an unknown embed id and a pending product read alike.
  if (
    !settings ||
    !product ||
    product.partnerId !== settings.partnerId ||
    product.environment !== settings.environment ||
    product.status === 'pending_deploy' ||
    !product.engineAddress
  ) {
    throw new ApiError('not_found', 'No such embed product.');
  }
  return { settings, product };
}

/** A scheduled fee change, bounded and best effort: without it the view just shows none. */
async function feeChange(opts: PluginState, product: Product) {
  const client = opts.clientFor?.(product.chainId);
  if (!client || !product.engineAddress) return null;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      readScheduledFeeChange(client, { engine: product.engineAddress }),
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), 1500);
      }),
    ]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The chain's permit deposit router when it is deployed (code at its computed address); null
 * otherwise or when the chain cannot say now (the embed then skips the permit rung). Bounded.
 */
async function permitRouter(opts: PluginState, chainId: number): Promise<string | null> {
  const client = opts.clientFor?.(chainId);
  if (!client) return null;
  const address = permitRouterAddress();
  let timer: NodeJS.Timeout | undefined;
  try {
    const code = await Promise.race([
      client.getCode({ address }),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), 1500);
      }),
    ]);
    return code && code !== '0x' ? address : null;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

async function productView(opts: PluginState, product: Product): Promise<EmbedProductView> {
  const [latest, health, scheduled, router] = await Promise.all([
    opts.snapshots.latestFor([product.id]),
    opts.chain.readHealth(product).then(
      (h): HealthReading | undefined => h,
      () => undefined, // the view says deposits are off for now; the page still renders
    ),
    opts.feeChanges.get(`${product.chainId}:${product.engineAddress}`, () =>
      feeChange(opts, product),
    ),
    opts.routers.get(String(product.chainId), () => permitRouter(opts, product.chainId)),
  ]);
  return buildProductView(
    product,
    latest.get(product.id),
    health,
    opts.chainName(product.chainId),
    scheduled,
    router,
  );
}

/** The `origin` parameter when it is one of the allowed origins; else the only allowed one. */
function hostOrigin(settings: EmbedSettings, given: string | undefined): string | null {
  if (given && settings.allowedOrigins.includes(given)) return given;
  return settings.allowedOrigins.length === 1 ? settings.allowedOrigins[0]! : null;
}

function sendAsset(
  request: FastifyRequest,
  reply: FastifyReply,
  asset: { body: Buffer; gzip: Buffer; contentType: string },
  cacheControl: string,
) {
  reply.header('content-type', asset.contentType);
  reply.header('cache-control', cacheControl);
  reply.header('vary', 'Accept-Encoding');
  reply.header('x-content-type-options', 'nosniff');
  // Scripts are fetched cross-origin by the partner's page (host.js) and by module loading.
  reply.header('cross-origin-resource-policy', 'cross-origin');
  if (acceptsGzip(request.headers['accept-encoding'])) {
    reply.header('content-encoding', 'gzip');
    return reply.send(asset.gzip);
  }
  return reply.send(asset.body);
}

const htmlError = (err: ApiError) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not available</title></head>` +
  `<body style="font-family:system-ui,sans-serif;padding:1rem"><p>This deposit widget is not available: ${err.message}</p>` +
  `<p><small>Code: ${err.code}</small></p></body></html>`;

export function embedPlugin(options: EmbedPluginOptions): FastifyPluginAsyncTypebox {
  // A scheduled fee change moves rarely: read at most once a minute per engine.
  const opts = {
    ...options,
    feeChanges: createTtlCache<ScheduledFeeChange | null>(60_000),
    routers: createTtlCache<string | null>(60_000),
  };
  return async (app) => {
    // Per client address, through @fastify/rate-limit over the kit's counter store (which keeps
    // counting in memory while Redis is away; src/http/fixed-window.ts). Assets are not counted.
    await app.register(rateLimit, {
      hook: 'onRequest',
      global: true,
      timeWindow: 60_000,
      max: opts.ratePerMinute,
      keyGenerator: (request) => request.ip,
      allowList: (request) => request.url.startsWith(`${EMBED_PREFIX}/assets/`),
      store: rateLimitStore(() =>
        opts.redis
          ? createFallbackCounter(opts.redis, 'pys:embed:', createMemoryCounter(opts.rateClock))
          : createMemoryCounter(opts.rateClock),
      ),
      // Should the store fail anyway, the window goes uncounted, never a 500 for every request.
      skipOnError: true,
      addHeadersOnExceeding: {
        'x-ratelimit-limit': false,
        'x-ratelimit-remaining': false,
        'x-ratelimit-reset': false,
      },
      addHeaders: {
        'x-ratelimit-limit': false,
        'x-ratelimit-remaining': false,
        'x-ratelimit-reset': false,
        'retry-after': true,
      },
      errorResponseBuilder: () =>
        new ApiError(
          'rate_limited',
          'Too many embed requests from this address; retry after the Retry-After delay.',
        ),
    });

    app.get(`${EMBED_PREFIX}/host.js`, { schema: { hide: true } }, async (request, reply) => {
      const asset = opts.assets?.files.get('host.js');
      if (!asset) throw new ApiError('service_unavailable', notBuilt);
      // Not content-hashed (partners include it by this name): revalidated every few minutes.
      return sendAsset(request, reply, asset, 'public, max-age=300');
    });

    app.get(`${EMBED_PREFIX}/assets/*`, { schema: { hide: true } }, async (request, reply) => {
      const rel = `assets/${(request.params as { '*': string })['*']}`;
      const asset = opts.assets?.files.get(rel);
      if (!asset) throw new ApiError('not_found', 'No such embed asset.');
      // Content-hashed names: safe to keep for a year.
      return sendAsset(request, reply, asset, 'public, max-age=31536000, immutable');
    });

    app.get(
      `${EMBED_PREFIX}/api/:embedId/:slug`,
      { schema: { hide: true, params: Params } },
      async (request, reply) => {
        const { product } = await resolve(opts, request.params.embedId, request.params.slug);
        reply.header('cache-control', 'no-store');
        return { success: true as const, data: await productView(opts, product) };
      },
    );

    app.post(
      `${EMBED_PREFIX}/api/:embedId/:slug/transactions`,
      {
        schema: { hide: true, params: Params, body: TransactionBody },
        config: { validationErrorCode: () => 'invalid_payload' },
      },
      async (request, reply) => {
        const { settings, product } = await resolve(
          opts,
          request.params.embedId,
          request.params.slug,
        );
        const b = request.body;
        const eventType = b.kind === 'deposit' ? 'deposit.submitted' : 'redeem.submitted';
        const data = {
          product_slug: product.slug,
          chain_id: product.chainId,
          tx_hash: b.tx_hash,
          user_address: b.user_address,
          ...(b.kind === 'deposit' ? { amount: b.amount } : { shares: b.shares }),
        };
        // The same checks as a partner's inbound event of this type.
        const invalid = dataError(eventType, data);
        if (invalid) throw new ApiError('invalid_payload', invalid);
        const raw = JSON.stringify({
          occurred_at: (opts.now?.() ?? new Date()).toISOString(),
          data,
        });
        const txHash = b.tx_hash.toLowerCase();
        const result = await opts.events.store({
          partnerId: settings.partnerId,
          environment: settings.environment,
          // One report per transaction: a retry of the same report is a duplicate, not a new row.
          idempotencyKey: `embed:${product.chainId}:${txHash}`,
          eventType,
          bodySha256: sha256(raw),
          body: raw,
          occurredAt: new Date(JSON.parse(raw).occurred_at),
          tx: { productId: product.id, chainId: product.chainId, txHash },
        });
        reply.header('cache-control', 'no-store');
        return {
          success: true as const,
          event_id: result.event.id,
          duplicate: result.outcome !== 'stored',
        };
      },
    );

    app.get(
      `${EMBED_PREFIX}/host-example/:embedId/:slug`,
      { schema: { hide: true, params: Params } },
      async (request, reply) => {
        const { embedId, slug } = request.params;
        await resolve(opts, embedId, slug);
        const embedBase =
          opts.publicUrl?.() ?? `${request.protocol}://${request.host}${EMBED_PREFIX}`;
        const nonce = randomBytes(16).toString('base64');
        reply.header('content-security-policy', hostExampleCsp(new URL(embedBase).origin, nonce));
        reply.header('cache-control', 'no-store');
        reply.type('text/html; charset=utf-8');
        return renderHostExample({ embedBase, embedId, slug, nonce });
      },
    );

    app.get(
      `${EMBED_PREFIX}/:embedId/:slug`,
      { schema: { hide: true, params: Params, querystring: PageQuery } },
      async (request, reply) => {
        reply.header('cache-control', 'no-store');
        reply.header('x-content-type-options', 'nosniff');
        reply.header('referrer-policy', 'no-referrer');
        let resolved: { settings: EmbedSettings; product: Product };
        try {
          resolved = await resolve(opts, request.params.embedId, request.params.slug);
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          reply.header('content-security-policy', ERROR_PAGE_CSP);
          return reply.code(err.status).type('text/html; charset=utf-8').send(htmlError(err));
        }
        const { settings, product } = resolved;
        reply.header('content-security-policy', embedCsp(settings.allowedOrigins));
        if (!opts.assets) {
          return reply
            .code(503)
            .type('text/html; charset=utf-8')
            .send(htmlError(new ApiError('service_unavailable', notBuilt)));
        }
        const q = request.query;
        const html = renderEmbedPage(
          {
            embed_id: settings.embedId,
            slug: product.slug,
            api_base: `${EMBED_PREFIX}/api/${settings.embedId}/${product.slug}`,
            product: await productView(opts, product),
            theme: parseTheme(q.theme),
            accent: parseAccent(q.accent),
            bridge: q.bridge === '1' || q.bridge === 'true',
            host_origin: hostOrigin(settings, q.origin),
          },
          opts.assets.entry,
          EMBED_PREFIX,
        );
        return reply.type('text/html; charset=utf-8').send(html);
      },
    );
  };
}

const notBuilt =
  'The embed app is not built on this server: run `npm run build:embed` (npm ci does it).';
