/**
 * Builds the Fastify application from its parts: request ids (request-id.ts), the access log
 * (access-log.ts), the error envelope (error-mapping.ts), the OpenAPI document (openapi.ts), the
 * repositories the routes read through (dependencies.ts), then the routes. It does not listen;
 * main.ts does, and tests use inject or a port.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController } from 'fastify';
import { type FrontLane, scopeOfPartner } from '../api/front-lane.ts';
import { registerOpenApi } from '../api/openapi.ts';
import { partnerScope } from '../api/partner-scope.ts';
import { apyHistoryRoute } from '../api/routes/apy-history.ts';
import { DEFAULT_EVENTS_RETENTION_DAYS, eventsRoute } from '../api/routes/events.ts';
import { feeScheduleRoute } from '../api/routes/fee-schedule.ts';
import { feeStatsRoute } from '../api/routes/fee-stats.ts';
import { healthRoutes } from '../api/routes/health.ts';
import { inboundWebhookRoute } from '../api/routes/inbound-webhook.ts';
import { positionRoute } from '../api/routes/position.ts';
import { productHealthRoute } from '../api/routes/product-health.ts';
import { productsRoutes } from '../api/routes/products.ts';
import { yieldCalcRoute } from '../api/routes/yield-calc.ts';
import type { Database } from '../db/client.ts';
import { coalesce } from '../db/coalesce.ts';
import { createEmbedSettingsRepo } from '../db/embed-settings.ts';
import { createEventsRepo } from '../db/events.ts';
import { createInboundEventsRepo, type InboundEventsRepo } from '../db/inbound-events.ts';
import { createRedeemRequestsRepo } from '../db/redeem-requests.ts';
import type { EmbedAssets } from '../embed/assets.ts';
import { embedPlugin } from '../embed/plugin.ts';
import { installAccessLog } from '../http/access-log.ts';
import { installCacheControl } from '../http/cache-control.ts';
import { type ChainEntries, wireDependencies } from '../http/dependencies.ts';
import { clientErrorHandler, frameworkErrors, installErrorMapping } from '../http/error-mapping.ts';
import type { BaseApp } from '../http/fastify-app.ts';
import { installHeldAnswers } from '../http/held-answers.ts';
import { installRequestIds, requestIdFor } from '../http/request-id.ts';
import { requestLoggerFactory } from '../http/request-logger.ts';
import { installTextCheck } from '../http/text-check.ts';
import type { Logger } from '../logger.ts';
import { type PortalOptions, portalPlugin } from '../portal/plugin.ts';
import type { Redis } from '../redis.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';

export type { ChainEntries } from '../http/dependencies.ts';

export interface AppDeps {
  /**
   * Record per-request metrics (src/http/http-metrics.ts). The service turns it on when METRICS_PORT
   * is set; off, a request pays nothing for them.
   */
  httpMetrics?: boolean;
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
  /**
   * The partner API's front lane (src/api/front-lane.ts): held answers sent again in front of the
   * framework. On unless false (tests compare the two ways).
   */
  frontLane?: boolean;
  /** The demo's state, reported by /ready (sync/demo-readiness.ts); absent: `off`. */
  demo?: () => 'off' | 'computing_history' | 'ready';
  /** Clock of the date-window endpoints (tests pin it). */
  now?: () => Date;
  /** Clock (ms) of the in-memory rate-limit windows of the partner scope (tests drive it). */
  rateClock?: () => number;
  /** Decrypts the partners' inbound webhook secrets. Without it every inbound request is refused. */
  secretBox?: SecretBox;
  /** How many days back the events feed lists (EVENTS_FEED_RETENTION_DAYS); default 30. */
  eventsRetentionDays?: number;
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
/** Node's header limit (16 KiB) bounds a URL anyway; the router never refuses a parameter itself. */
const MAX_PATH_PARAM_LENGTH = 16 * 1024;

export async function buildApp(deps: AppDeps) {
  const base = Fastify({
    loggerInstance: deps.logger,
    // Fastify's two per-request lines are replaced by the one access line (access-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // Each request's child logger is made when the request first writes a line (request-logger.ts).
    childLoggerFactory: requestLoggerFactory,
    bodyLimit: BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: requestIdFor,
    // Behind a proxy the operator sets trustProxy; by default the socket address is the client.
    trustProxy: false,
    return503OnClosing: true,
    // Any path parameter reaches its route, so the key is checked before the path (DECISIONS'
    // order) and an over-long slug is the route's 404 like any unknown one, not the router's.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors,
    clientErrorHandler: clientErrorHandler(deps.logger),
  });
  installRequestIds(base);
  const closing = installGracefulClose(base);
  installAccessLog(base, { metrics: deps.httpMetrics === true });
  installErrorMapping(base);
  installTextCheck(base);
  installCacheControl(base);
  // After cache-control.ts: its onSend hook must have run when an answer is held.
  const held = installHeldAnswers(base, {
    scopeOf: (request) => (request.partner ? scopeOfPartner(request.partner) : undefined),
    closing,
  });
  const useFrontLane = frontLaneSlot(base, deps.frontLane !== false);
  const app = base.withTypeProvider<TypeBoxTypeProvider>();

  // Registered before the routes it describes.
  await registerOpenApi(base);
  const wired = wireDependencies(deps);
  await app.register(healthRoutes, {
    db: deps.db,
    redis: deps.redis,
    chainRuntime: wired.chainRuntime,
    demo: deps.demo ?? (() => 'off' as const),
  });

  app.addHook('onClose', wired.close);
  const { cache, products, snapshots, chain, chainName } = wired;
  const clock = deps.now ? { now: deps.now } : {};
  await app.register(partnerScope, {
    keys: wired.keys,
    redis: deps.redis,
    front: { held, closing, metrics: deps.httpMetrics === true, use: useFrontLane },
    ...(deps.rateClock ? { clock: deps.rateClock } : {}),
    routes: [
      productsRoutes({ cache, products, snapshots, chainName }),
      apyHistoryRoute({ cache, products, snapshots, ...clock }),
      feeStatsRoute({ cache, products, snapshots, ...clock }),
      yieldCalcRoute({ products, snapshots }),
      productHealthRoute({ products, chain, cache }),
      feeScheduleRoute({ products, chain }),
      positionRoute({ products, chain, cache, requests: createRedeemRequestsRepo(deps.db) }),
      eventsRoute({
        cache,
        products,
        events: createEventsRepo(deps.db),
        retentionDays: deps.eventsRetentionDays ?? DEFAULT_EVENTS_RETENTION_DAYS,
        ...clock,
      }),
      inboundWebhookRoute({
        products,
        secrets: wired.inboundSecrets,
        events: inboundStore(createInboundEventsRepo(deps.db)),
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
        clientFor: wired.clientFor,
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
      reads: { products, snapshots, cache },
      embedUrl: deps.portal.embedUrl ?? deps.embed?.publicUrl,
      secretBox: deps.secretBox,
      db: deps.db,
      logger: deps.logger,
      redis: deps.redis,
    });
  }
  return app;
}

/**
 * Node's server.close() only ends connections idle at that moment; a keep-alive connection whose
 * request is in flight would stay open after its response and hold shutdown until the timeout.
 * Once closing, every response says `Connection: close`, so its socket ends with it.
 */
function installGracefulClose(app: BaseApp): () => boolean {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onSend', function closeConnectionWhenClosing(_request, reply, payload, done) {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  return () => closing;
}

/**
 * Puts a front lane (src/api/front-lane.ts) before Fastify's own request handler on its server:
 * a request the lane does not answer goes to Fastify as it came. Fastify's server stays as Fastify
 * made it (its timeouts, keep-alive and closing); only its one `request` listener is wrapped. The
 * lane arrives once the partner scope is registered (`use`); until then every request goes to
 * Fastify. (A second binding Fastify makes for `localhost`, on another address, keeps Fastify's
 * handler alone: its requests all take the lifecycle.)
 */
function frontLaneSlot(app: BaseApp, enabled: boolean): (lane: FrontLane) => void {
  if (!enabled) return () => {};
  const listeners = app.server.listeners('request');
  const fastifyHandler = listeners[0] as
    | ((req: IncomingMessage, res: ServerResponse) => void)
    | undefined;
  if (fastifyHandler === undefined || listeners.length !== 1) {
    throw new Error(`expected Fastify's one request listener, found ${listeners.length}`);
  }
  let lane: FrontLane = () => false;
  app.server.removeListener('request', fastifyHandler);
  app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!lane(req, res)) fastifyHandler(req, res);
  });
  return (given) => {
    lane = given;
  };
}

/**
 * The inbound endpoint's store, group-committed: the events of concurrent requests are written in
 * one statement and one commit (src/db/coalesce.ts); each request answers once its own event is
 * committed, so an acknowledged event is stored exactly as before (issue #33 item 6).
 */
function inboundStore(repo: InboundEventsRepo): Pick<InboundEventsRepo, 'store'> {
  return { store: coalesce((events) => repo.storeMany(events)) };
}
