/**
 * `Cache-Control` as a route declares it (`config.cacheControl`): sent with the route's successful
 * answers only, so an error never carries a success's cache lifetime. The partner API's document
 * shows the same declaration as the 200 answer's `Cache-Control` header (src/api/openapi.ts), so
 * the header and its documentation come from one line of the route.
 */
import type { onSendHookHandler } from 'fastify';
import type { BaseApp } from './fastify-app.ts';

export function installCacheControl(app: BaseApp): void {
  // Added to each route that declares one, when it is registered: a route without a declaration
  // pays no hook, and a route with one reads its own declaration from this closure, not from
  // request.routeOptions (a getter that builds an object per call) on every request (#33 item 7).
  app.addHook('onRoute', (route) => {
    const declared = route.config?.cacheControl;
    if (!declared) return;
    const sendCacheControl: onSendHookHandler = (_request, reply, payload, done) => {
      if (reply.statusCode < 300 && !reply.hasHeader('cache-control')) {
        reply.header('cache-control', declared);
      }
      done(null, payload);
    };
    const own = route.onSend === undefined ? [] : [route.onSend].flat();
    route.onSend = [...own, sendCacheControl];
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The Cache-Control of this route's successful answers; documented on its 200 answer. */
    cacheControl?: string;
  }
}
