/**
 * `Cache-Control` as a route declares it (`config.cacheControl`): sent with the route's successful
 * answers only, so an error never carries a success's cache lifetime. The partner API's document
 * shows the same declaration as the 200 answer's `Cache-Control` header (src/api/openapi.ts), so
 * the header and its documentation come from one line of the route.
 */
import type { BaseApp } from './fastify-app.ts';

export function installCacheControl(app: BaseApp): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const declared = request.routeOptions.config?.cacheControl;
    if (declared && reply.statusCode < 300 && !reply.hasHeader('cache-control')) {
      reply.header('cache-control', declared);
    }
    return payload;
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The Cache-Control of this route's successful answers; documented on its 200 answer. */
    cacheControl?: string;
  }
}
