/**
 * The OpenAPI document, served at /openapi.json and rendered at /docs. It is generated from the
 * declarations of the routes (their schemas, operation ids, summaries, tags, error codes and
 * Cache-Control), so it cannot drift from what the API does; this module holds only what no route
 * declares: the document's header, the error catalogue table, the security scheme, the tags'
 * descriptions and the outbound webhooks.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ERROR_CATALOGUE, type ErrorCode } from '../http/errors.ts';
import type { BaseApp } from '../http/fastify-app.ts';
import { ErrorEnvelope } from '../http/schemas.ts';
import { openApiWebhooks } from '../webhooks/event-catalogue.ts';
import { finishOpenApiDocument } from './openapi-document.ts';
import { collectPartnerDocs } from './partner-docs.ts';

const catalogueTable = (Object.keys(ERROR_CATALOGUE) as ErrorCode[])
  .map(
    (code) =>
      `| \`${code}\` | ${ERROR_CATALOGUE[code].status} | ${ERROR_CATALOGUE[code].message} |`,
  )
  .join('\n');

/**
 * The partner guide (docs/partner-guide.md), served beside the reference. The description links to
 * it by path (so the rendered reference's link works on any deployment); `externalDocs` needs an
 * absolute URL, which names the local service as `servers` does (openapi-document.ts).
 */
export const PARTNER_GUIDE_PATH = '/docs/partner-guide.md';

export const OPENAPI_BASE = {
  openapi: '3.1.0',
  info: {
    title: 'Partner Yield API',
    version: '1.0.0',
    description:
      'Partner API of the partner yield service: reads, and the signed inbound webhook. A first integration, step by step: ' +
      `the [partner guide](${PARTNER_GUIDE_PATH}) (the document's externalDocs). Every error is \`{ success: false, code, message }\`; ` +
      'switch on `code`. Amounts are decimal strings in whole asset units; APYs are decimal fractions with 6 places.\n\n' +
      'Products, product detail, apy-history and fee-stats answers of 1 KiB or more are sent gzip-encoded (`Content-Encoding: gzip`) ' +
      "when the request's `Accept-Encoding` takes gzip, and as plain JSON otherwise; they carry `Vary: Accept-Encoding`.\n\n" +
      `| code | HTTP | meaning |\n|---|---|---|\n${catalogueTable}`,
  },
  externalDocs: {
    description:
      'Partner guide: from the API key to the first verified webhook, with the SDK and curl side by side, ' +
      `and where every key and secret comes from. Served by the service at ${PARTNER_GUIDE_PATH}: your deployment's base URL + that path.`,
    url: `http://127.0.0.1:3000${PARTNER_GUIDE_PATH}`,
  },
  components: {
    schemas: { ErrorEnvelope },
    securitySchemes: {
      ApiKey: { type: 'apiKey' as const, in: 'header' as const, name: 'X-Api-Key' },
    },
  },
};

/** Registers the document generator; call before the routes it describes are registered. */
export async function registerOpenApi(app: BaseApp): Promise<void> {
  // Each route's declared Cache-Control, for its 200 answer's documented header.
  const cacheControl = new Map<string, string>();
  app.addHook('onRoute', (route) => {
    const declared = route.config?.cacheControl;
    if (!declared) return;
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    for (const method of [route.method].flat()) cacheControl.set(`${method} ${path}`, declared);
  });
  await app.register(swagger, {
    openapi: { ...OPENAPI_BASE, webhooks: openApiWebhooks() },
    // Operation metadata, named components, headers and the contract's parameter types.
    transformObject: (document) =>
      'openapiObject' in document
        ? (finishOpenApiDocument(
            document.openapiObject as Record<string, unknown>,
            cacheControl,
          ) as Partial<typeof document.openapiObject>)
        : document.swaggerObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // The guide and the pages and images it links to (partner-docs.ts).
  for (const doc of collectPartnerDocs()) {
    app.get(
      doc.servedPath,
      { schema: { hide: true }, config: { cacheControl: 'public, max-age=300' } },
      async (_request, reply) => reply.type(doc.contentType).send(await doc.body()),
    );
  }
}
