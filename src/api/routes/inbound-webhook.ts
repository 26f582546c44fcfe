/**
 * POST /api/partner/webhooks/inbound: a partner pushes an event to the service.
 *
 * Inside the partner scope (key 401, per-key rate limit 429), the body is read as raw bytes (415
 * for any Content-Type but application/json, 413 over 64 KiB), then the checks run in the order
 * DECISIONS fixes, each before anything of the next is looked at:
 *   1. X-Service-Signature: HMAC-SHA256 of the raw bytes under the partner's inbound secret of the
 *      key's environment (or, during a rotation's grace period, the previous one), compared in constant time → 401 signature_mismatch (also when the header
 *      is absent or no secret is configured). Nothing of the body is parsed before this.
 *   2. Idempotency-Key: absent → 400 missing_idempotency_key; not 1–255 printable ASCII characters,
 *      or sent twice → the same code, saying it is not valid.
 *   3. X-Service-Event in the allowlist → else 400 unknown_event.
 *   4. Body: JSON object `{ occurred_at, data }`, `data` fitting the type's schema, the product of a
 *      submitted transaction being the partner's own in this environment and on that chain
 *      → else 400 invalid_payload naming the field.
 *   5. Store once per partner and key: the same request again answers the original event with
 *      `duplicate: true`; another body, event type or environment under the key → 409
 *      idempotency_conflict.
 * The secret and the signature are never logged (the access log carries no headers).
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { InboundEventsRepo, NewInboundEvent } from '../../db/inbound-events.ts';
import type { InboundSecretsRepo } from '../../db/inbound-secrets.ts';
import type { ProductsRepo } from '../../db/products.ts';
import { ApiError } from '../../http/errors.ts';
import { InboundAck } from '../../http/schemas.ts';
import { unsafeTextAt } from '../../http/text-check.ts';
import { sha256 } from '../../sha256.ts';
import { inboundEvents } from '../../telemetry/metrics.ts';
import {
  dataError,
  INBOUND_EVENT_TYPES,
  InboundBody,
  isInboundEventType,
  isSubmittedEvent,
  parseInboundEnvelope,
} from '../../webhooks/inbound-schemas.ts';
import { verifySignature } from '../../webhooks/signature.ts';
import { partnerOf } from '../partner-identity.ts';

export const INBOUND_PATH = '/api/partner/webhooks/inbound';

/** 1 to 255 printable ASCII characters (0x20–0x7E). */
const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

/** Documentation of the headers; they are checked by the handler, in order (see above). */
const InboundHeaders = Type.Object({
  'Idempotency-Key': Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[\\x20-\\x7E]{1,255}$',
    description:
      'Unique key of the delivery: 1 to 255 printable ASCII characters, scoped to your partner ' +
      '(both environments) and kept at least 30 days. The same request again answers the ' +
      'original event with `duplicate: true`; another body or event type under the key is 409.',
  }),
  'X-Service-Event': Type.Union(
    INBOUND_EVENT_TYPES.map((t) => Type.Literal(t)),
    { description: 'Event type; one of the allowlist.' },
  ),
  'X-Service-Signature': Type.String({
    pattern: '^[0-9a-f]{64}$',
    description:
      'Lowercase hex HMAC-SHA256 of the exact request body bytes, keyed with the inbound secret ' +
      '(`whsec_…`, as UTF-8) of the API key environment.',
  }),
});

export interface InboundWebhookDeps {
  products: Pick<ProductsRepo, 'getBySlug'>;
  /** Undefined when the service has no secret box: every request then fails its signature. */
  secrets: Pick<InboundSecretsRepo, 'keys'> | undefined;
  events: Pick<InboundEventsRepo, 'store'>;
}

/** A header's single value; undefined when absent. */
const headerValue = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** How many times a header was sent (Node joins repeats of unknown headers with ", "). */
const headerCount = (rawHeaders: readonly string[], name: string): number => {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === name) n++;
  }
  return n;
};

function checkIdempotencyKey(headers: IncomingHttpHeaders, rawHeaders: readonly string[]): string {
  const key = headerValue(headers, 'idempotency-key');
  if (key === undefined) throw new ApiError('missing_idempotency_key');
  if (headerCount(rawHeaders, 'idempotency-key') > 1 || !IDEMPOTENCY_KEY.test(key)) {
    throw new ApiError(
      'missing_idempotency_key',
      'The Idempotency-Key header is not valid: send it once, 1 to 255 printable ASCII characters.',
    );
  }
  return key;
}

export function inboundWebhookRoute(deps: InboundWebhookDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Encapsulated to this plugin: the body stays the exact bytes received, because the signature
    // is over them; nothing is parsed before it verifies. Any other media type answers 415. The
    // app's 64 KiB body limit applies to the buffer (413).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
      done(null, body);
    });
    // Refusals by catalogue code (a bounded set), whichever step refused: the key, the signature…
    app.addHook('onError', async (_request, _reply, err) => {
      inboundEvents.inc({ outcome: err instanceof ApiError ? err.code : 'internal_error' });
    });

    app.post(
      INBOUND_PATH,
      {
        schema: {
          operationId: 'postInboundEvent',
          summary: 'Push an inbound event',
          tags: ['Webhooks'],
          description:
            'The partner pushes a signed event (`ping`, `deposit.submitted`, `redeem.submitted`). Signed with HMAC-SHA256 over the raw body under the inbound secret; idempotent per `Idempotency-Key`.\n\n' +
            'Signed with the inbound secret of the key environment. Checks, in order: key (401), ' +
            'rate limit (429), media type (415) and size (413), signature (401 ' +
            '`signature_mismatch`), `Idempotency-Key` (400 `missing_idempotency_key`), event type ' +
            '(400 `unknown_event`), body (400 `invalid_payload`), idempotency (200 with ' +
            '`duplicate: true`, or 409 `idempotency_conflict`). Accepted event types: `ping`, ' +
            '`deposit.submitted`, `redeem.submitted`.',
          headers: InboundHeaders,
          body: InboundBody,
          response: { 200: InboundAck },
        },
        // The header and body schemas document the request; the handler checks it, because the
        // signature must be verified over the raw bytes before any other rule is applied.
        validatorCompiler: () => () => true,
        config: {
          cacheControl: 'no-store',
          errorCodes: [
            'signature_mismatch',
            'missing_idempotency_key',
            'unknown_event',
            'invalid_payload',
            'idempotency_conflict',
            'payload_too_large',
            'unsupported_media_type',
          ],
        },
      },
      async (request) => {
        const caller = partnerOf(request);
        const raw: unknown = request.body;
        // Only a request with neither body nor Content-Type gets here without a buffer.
        if (!Buffer.isBuffer(raw)) throw new ApiError('unsupported_media_type');
        const headers = request.raw.headers;

        // 1. Signature, over the raw bytes, before anything else of the request is read.
        const keys = await deps.secrets?.keys(caller.partnerId, caller.environment);
        if (keys === undefined) {
          throw new ApiError(
            'signature_mismatch',
            'No inbound secret is configured for the environment of this key.',
          );
        }
        const signature = headerValue(headers, 'x-service-signature');
        if (signature === undefined) {
          throw new ApiError('signature_mismatch', 'The X-Service-Signature header is required.');
        }
        // After a rotation the previous secret verifies too, until the end of its grace period.
        const previous =
          keys.previous && keys.previous.expiresAt.getTime() > Date.now()
            ? keys.previous.secret
            : undefined;
        const verified =
          verifySignature(keys.current, raw, signature) ||
          (previous !== undefined && verifySignature(previous, raw, signature));
        if (!verified) throw new ApiError('signature_mismatch');

        // 2. Idempotency-Key.
        const idempotencyKey = checkIdempotencyKey(headers, request.raw.rawHeaders);

        // 3. Event type.
        const eventType = headerValue(headers, 'x-service-event');
        if (!isInboundEventType(eventType)) {
          throw new ApiError(
            'unknown_event',
            eventType === undefined
              ? 'The X-Service-Event header is required.'
              : `The event type is not accepted; accepted: ${INBOUND_EVENT_TYPES.join(', ')}.`,
          );
        }

        // 4. Body.
        const body = parseInboundEnvelope(raw);
        if (!body.ok) throw new ApiError('invalid_payload', body.message);
        // Text PostgreSQL would refuse (a NUL, a lone surrogate), at any depth: 400, not a 500.
        const unsafe = unsafeTextAt(body.data, 'data');
        if (unsafe) {
          throw new ApiError(
            'invalid_payload',
            `${unsafe} holds a NUL character or a lone surrogate, which the service cannot store.`,
          );
        }
        const invalid = dataError(eventType, body.data);
        if (invalid) throw new ApiError('invalid_payload', invalid);
        let tx: NewInboundEvent['tx'];
        if (isSubmittedEvent(eventType)) {
          // Validated by dataError above.
          const data = body.data as { product_slug: string; chain_id: number; tx_hash: string };
          const product = await deps.products.getBySlug(data.product_slug);
          // Another partner's product reads exactly like an unknown one: nothing leaks.
          if (
            !product ||
            product.partnerId !== caller.partnerId ||
            product.environment !== caller.environment
          ) {
            throw new ApiError(
              'invalid_payload',
              'data.product_slug does not name one of your products in the environment of this key.',
            );
          }
          if (product.chainId !== data.chain_id) {
            throw new ApiError(
              'invalid_payload',
              'data.chain_id is not the chain of the product data.product_slug names.',
            );
          }
          tx = {
            productId: product.id,
            chainId: data.chain_id,
            txHash: data.tx_hash.toLowerCase(),
          };
        }

        // 5. Store once; the same request again is a no-op that answers the original event.
        const result = await deps.events.store({
          partnerId: caller.partnerId,
          environment: caller.environment,
          idempotencyKey,
          eventType,
          bodySha256: sha256(raw),
          body: raw.toString('utf8'),
          occurredAt: body.occurredAt,
          ...(tx ? { tx } : {}),
        });
        if (result.outcome === 'conflict') {
          throw new ApiError(
            'idempotency_conflict',
            'This Idempotency-Key was already used with another body, event type or environment.',
          );
        }
        inboundEvents.inc({ outcome: result.outcome === 'duplicate' ? 'duplicate' : 'accepted' });
        return {
          success: true as const,
          event_id: result.event.id,
          duplicate: result.outcome === 'duplicate',
        };
      },
    );
  };
}
