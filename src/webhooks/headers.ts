/**
 * The headers of a webhook request, in one place: the sender sends them and the portal's delivery
 * page shows them ("Headers as sent"), so the two cannot drift apart.
 */

export const DEFAULT_USER_AGENT = 'partner-yield-service-webhooks/1.0';

export interface DeliveryHeaderFields {
  eventType: string;
  /** `X-Service-Signature`. */
  signature: string;
  /** `X-Service-Event-Id` and `webhook-id`, sent when given. */
  eventId?: string | undefined;
  /** `webhook-timestamp` and `webhook-signature`, sent when both are given. */
  webhookTimestamp?: number | string | undefined;
  webhookSignature?: string | undefined;
  /** `X-Service-Sequence` and `X-Service-Partner-Sequence`, sent when given. */
  sequence?: bigint | null | undefined;
  partnerSequence?: bigint | null | undefined;
}

/** Every header of a delivery's request but `content-length`, in the order they are sent. */
export function deliveryHeaders(
  req: DeliveryHeaderFields,
  userAgent = DEFAULT_USER_AGENT,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-service-event': req.eventType,
    'x-service-signature': req.signature,
    ...(req.eventId === undefined
      ? {}
      : { 'x-service-event-id': req.eventId, 'webhook-id': req.eventId }),
    ...(req.webhookSignature === undefined || req.webhookTimestamp === undefined
      ? {}
      : {
          'webhook-timestamp': String(req.webhookTimestamp),
          'webhook-signature': req.webhookSignature,
        }),
    ...(req.sequence == null ? {} : { 'x-service-sequence': String(req.sequence) }),
    ...(req.partnerSequence == null
      ? {}
      : { 'x-service-partner-sequence': String(req.partnerSequence) }),
    'user-agent': userAgent,
  };
}
