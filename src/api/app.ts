/**
 * Builds the Fastify application: request ids, access logs, the error envelope, the 404 and body
 * limit rules, and the routes. It does not listen; main.ts does, and tests use inject or a port.
 */
import { randomBytes } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyError, type FastifyReply, LogController } from 'fastify';
import type { ChainClient } from '../chain/client.ts';
import {
  type ApiKeysRepo,
  createApiKeysRepo,
  createApiKeyUsage,
  keyWorks,
} from '../db/api-keys.ts';
import type { Database } from '../db/client.ts';
import { createEmbedSettingsRepo } from '../db/embed-settings.ts';
import { createInboundEventsRepo } from '../db/inbound-events.ts';
import { createInboundSecretsRepo } from '../db/inbound-secrets.ts';
import { createProductsRepo, type Environment, type ProductsRepo } from '../db/products.ts';
import { createSnapshotReads, type SnapshotReads } from '../db/snapshot-reads.ts';
import type { EmbedAssets } from '../embed/assets.ts';
import { embedPlugin } from '../embed/plugin.ts';
import type { Logger } from '../logger.ts';
import { type PortalOptions, portalPlugin } from '../portal/plugin.ts';
import type { Redis } from '../redis.ts';
import { openApiWebhooks } from '../webhooks/event-catalogue.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import { createChainReader } from './chain-reader.ts';
import { ApiError, ERROR_CATALOGUE, type ErrorCode, envelope } from './errors.ts';
import { apiKeyDigest } from './keys.ts';
import { partnerScope } from './partner-scope.ts';
import { createReadCache } from './read-cache.ts';
import { apyHistoryRoute } from './routes/apy-history.ts';
import { feeStatsRoute } from './routes/fee-stats.ts';
import { healthRoutes } from './routes/health.ts';
import { inboundWebhookRoute } from './routes/inbound-webhook.ts';
import { positionRoute } from './routes/position.ts';
import { productHealthRoute } from './routes/product-health.ts';
import { productsRoutes } from './routes/products.ts';
import { yieldCalcRoute } from './routes/yield-calc.ts';
import { ErrorEnvelope } from './schemas.ts';

export type ChainEntries = ReadonlyArray<{
  chainId: number;
  name: string;
  evm: boolean;
  client: ChainClient;
}>;

export interface AppDeps {
  db: Database;
  logger: Logger;
  /** Present when REDIS_URL is configured. */
  redis?: Redis | undefined;
  /** The chains products live on (clients for live reads, display names); may arrive later. */
  chains?: ChainEntries | Promise<ChainEntries>;
  /** Timeout and cache of live chain reads (tests shorten them). */
  chainReads?: { timeoutMs?: number; cacheMs?: number; headMs?: number };
  /** How often the read cache checks the read-model version (tests shorten it). */
  readCache?: { pollMs?: number };
  /** Clock of the date-window endpoints (tests pin it). */
  now?: () => Date;
  /** Decrypts the partners' inbound webhook secrets. Without it every inbound request is refused. */
  secretBox?: SecretBox;
  /** The partner portal, served under /portal (owned by src/portal); absent: no portal. */
  portal?: Omit<PortalOptions, 'db' | 'logger' | 'redis'>;
  /** The embed, served under /embed (owned by src/embed); absent: no embed. */
  embed?: {
    assets: EmbedAssets | undefined;
    ratePerMinute: number;
    rateClock?: () => number;
    publicUrl?: () => string | undefined;
  };
}

export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Request ids: a random per-process prefix and a counter. Unique across processes and restarts
 * without drawing random bytes per request (which cost ~9 % of the API's CPU under load); they
 * identify a request in the logs and are not secrets.
 */
const REQUEST_ID_PREFIX = `req_${randomBytes(9).toString('base64url')}`;
let requestCounter = 0;
const nextRequestId = () => `${REQUEST_ID_PREFIX}${(++requestCounter).toString(36)}`;

const catalogueTable = (Object.keys(ERROR_CATALOGUE) as ErrorCode[])
  .map(
    (code) =>
      `| \`${code}\` | ${ERROR_CATALOGUE[code].status} | ${ERROR_CATALOGUE[code].message} |`,
  )
  .join('\n');

const OPENAPI_BASE = {
  openapi: '3.1.0',
  info: {
    title: 'Partner Yield API',
    version: '1.0.0',
    description:
      'Partner API of the partner yield service: reads, and the signed inbound webhook. Every error is `{ success: false, code, message }`; ' +
      'switch on `code`. Amounts are decimal strings in whole asset units; APYs are decimal fractions with 6 places.\n\n' +
      'Products, product detail, apy-history and fee-stats answers of 1 KiB or more are sent gzip-encoded (`Content-Encoding: gzip`) ' +
      "when the request's `Accept-Encoding` takes gzip, and as plain JSON otherwise; they carry `Vary: Accept-Encoding`.\n\n" +
      `| code | HTTP | meaning |\n|---|---|---|\n${catalogueTable}`,
  },
  components: {
    schemas: { ErrorEnvelope },
    securitySchemes: {
      ApiKey: { type: 'apiKey' as const, in: 'header' as const, name: 'X-Api-Key' },
    },
  },
};
const REQUEST_ID_HEADER = 'x-request-id';
/** A caller's own request id is echoed only when it is short and plain (it ends up in our logs). */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Maps errors raised by Fastify itself (parsing, limits) onto catalogue codes. */
function codeForFrameworkError(err: FastifyError): ErrorCode | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'payload_too_large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported_media_type';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'invalid_payload';
  }
  if (err.statusCode === 404) return 'not_found';
  if (err.statusCode === 413) return 'payload_too_large';
  if (err.statusCode === 415) return 'unsupported_media_type';
  return undefined;
}

export async function buildApp(deps: AppDeps) {
  const app = Fastify({
    loggerInstance: deps.logger,
    // Fastify's two per-request lines are replaced by the one access line below.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers[REQUEST_ID_HEADER];
      return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : nextRequestId();
    },
    // Behind a proxy the operator sets trustProxy; by default the socket address is the client.
    trustProxy: false,
    return503OnClosing: true,
    // Errors the router raises before any route runs (a malformed URL, an over-long path
    // parameter) get the envelope too: they name nothing that exists.
    frameworkErrors: (_err, _request, reply) => {
      // The router's generic reply type is not the app's; it is a plain reply here.
      (reply as FastifyReply).code(404).send(envelope('not_found', 'No such route.'));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });

  // Node's server.close() only ends connections idle at that moment; a keep-alive connection whose
  // request is in flight would stay open after its response and hold shutdown until the timeout.
  // Once closing, every response says `Connection: close`, so its socket ends with it.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  // One access-log line per request. Only fields that cannot carry a secret: never headers.
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        // A portal sign-in link carries its one-time token in the query: never logged.
        url: request.url.replace(/([?&]token=)[^&]*/g, '$1[redacted]'),
        route: request.routeOptions.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request completed',
    );
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) {
      return reply.code(err.status).headers(err.headers).send(envelope(err.code, err.message));
    }
    if (err.validation) {
      // A path parameter that fails its schema (say, a 300-character slug) names nothing that exists.
      const code: ErrorCode =
        err.validationContext === 'params'
          ? 'not_found'
          : (request.routeOptions.config?.validationErrorCode?.(err) ?? 'invalid_payload');
      return reply.code(400).send(envelope(code));
    }
    const mapped = codeForFrameworkError(err);
    if (mapped) {
      return reply.code(new ApiError(mapped).status).send(envelope(mapped));
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send(envelope('internal_error'));
  });

  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send(envelope('not_found', 'No such route.'));
  });

  // The OpenAPI document is generated from the schemas the routes validate and serialise with,
  // so it cannot drift from what the API does. Registered before the routes it describes.
  await app.register(swagger, { openapi: { ...OPENAPI_BASE, webhooks: openApiWebhooks() } });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, { db: deps.db, redis: deps.redis });

  // Reads of products, snapshots and keys go through one cache that the database's read-model
  // version invalidates (see read-cache.ts): the hot path does no database round trip.
  const cache = createReadCache(deps.db, deps.readCache);
  app.addHook('onClose', async () => cache.close());
  const productsRepo = createProductsRepo(deps.db);
  const products: ProductsRepo = {
    ...productsRepo,
    getBySlug: (slug) => cache.get(`slug:${slug}`, () => productsRepo.getBySlug(slug)),
    listForPartner: (partnerId, env) =>
      cache.get(`list:${partnerId}:${env}`, () => productsRepo.listForPartner(partnerId, env)),
  };
  const reads = createSnapshotReads(deps.db);
  const snapshots: SnapshotReads = {
    latestFor: (ids) => cache.get(`latest:${ids.join(',')}`, () => reads.latestFor(ids)),
    latestFinalDate: (id) => cache.get(`final:${id}`, () => reads.latestFinalDate(id)),
    latestNetApy: (id) => cache.get(`apy:${id}`, () => reads.latestNetApy(id)),
    apyHistory: (id, from, to) =>
      cache.get(`history:${id}:${from}:${to}`, () => reads.apyHistory(id, from, to)),
    feeStats: (id, from, to) =>
      cache.get(`fees:${id}:${from}:${to}`, () => reads.feeStats(id, from, to)),
  };
  const keysRepo = createApiKeysRepo(deps.db);
  // Inbound secrets are read through the cache (a rotation bumps the read-model version, so the
  // new secret applies within the cache's poll); entries are keyed by partner, never by a secret.
  const inboundSecretsRepo = deps.secretBox
    ? createInboundSecretsRepo(deps.db, deps.secretBox)
    : undefined;
  const inboundSecrets = inboundSecretsRepo && {
    get: (partnerId: string, environment: Environment) =>
      cache.get(`inbound_secret:${partnerId}:${environment}`, () =>
        inboundSecretsRepo.get(partnerId, environment),
      ),
  };
  // "Last used" for the portal's key list: at most one write a minute per key, off the hot path.
  const keyUsage = createApiKeyUsage(deps.db);
  const keys: ApiKeysRepo = {
    ...keysRepo,
    // Keyed by the key's hash: the cache never holds a secret as a map key.
    findByKey: async (key) => {
      const record = await cache.get(`key:${apiKeyDigest(key)}`, () => keysRepo.findByKey(key));
      if (record && keyWorks(record)) keyUsage.touch(record.id);
      return record;
    },
  };
  // The chains may start after the server listens (a fresh local chain takes seconds): the maps
  // fill when they are up, and until then chain reads answer 503 chain_rpc_unavailable.
  const clients = new Map<number, ChainClient>();
  const nonEvmChains = new Set<number>();
  const names = new Map<number, string>();
  Promise.resolve(deps.chains ?? []).then(
    (chains) => {
      for (const c of chains) {
        clients.set(c.chainId, c.client);
        names.set(c.chainId, c.name);
        if (!c.evm) nonEvmChains.add(c.chainId);
      }
      cache.invalidate(); // cached bodies may name a chain by its placeholder
    },
    () => {}, // a chain runtime that fails to start is reported by the service, not here
  );
  const chain = createChainReader({ ...deps.chainReads, clients, nonEvmChains });
  const chainName = (id: number) => names.get(id) ?? `chain-${id}`;
  const clock = deps.now ? { now: deps.now } : {};
  await app.register(partnerScope, {
    keys,
    redis: deps.redis,
    routes: [
      productsRoutes({ cache, products, snapshots, chainName }),
      apyHistoryRoute({ cache, products, snapshots, ...clock }),
      feeStatsRoute({ cache, products, snapshots, ...clock }),
      yieldCalcRoute({ products, snapshots }),
      productHealthRoute({ products, chain }),
      positionRoute({ products, chain }),
      inboundWebhookRoute({
        products,
        secrets: inboundSecrets,
        events: createInboundEventsRepo(deps.db),
      }),
    ],
  });
  if (deps.embed) {
    await app.register(
      embedPlugin({
        ...deps.embed,
        products,
        snapshots,
        chain,
        chainName,
        cache,
        settings: createEmbedSettingsRepo(deps.db),
        events: createInboundEventsRepo(deps.db),
        redis: deps.redis,
        ...clock,
      }),
    );
  }
  if (deps.portal) {
    await app.register(portalPlugin, {
      prefix: '/portal',
      ...deps.portal,
      secretBox: deps.secretBox,
      db: deps.db,
      logger: deps.logger,
      redis: deps.redis,
    });
  }
  return app;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Picks the catalogue code for a schema validation failure of this route. */
    validationErrorCode?: (err: FastifyError) => ErrorCode;
    /** The codes this route can answer beyond its scope's; documented in the OpenAPI document. */
    errorCodes?: readonly ErrorCode[];
  }
}
