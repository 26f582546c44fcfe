/**
 * The outbound events, typed from the event catalogue (the `webhooks` section of the service's
 * OpenAPI document, generated into ./generated/openapi.ts). The body of a delivery is exactly the
 * payload object of its type; the type travels in the `X-Service-Event` header. New types appear
 * over time: verifyWebhook returns them as unknown events, never rejects them.
 */
import { webhookEventTypes, type webhooks } from './generated/openapi.ts';

type Payload<T extends keyof webhooks> = webhooks[T] extends {
  post: { requestBody: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

export type WebhookEventType = keyof webhooks;
/** The payload of each event type. */
export type WebhookEventData = { [T in WebhookEventType]: Payload<T> };

export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = webhookEventTypes;

/** `deposit.confirmed` and `redeem.confirmed`: one chain log at confirmation depth. */
export type ConfirmedEvent = WebhookEventData['deposit.confirmed'];
export type RedeemRequestedEvent = WebhookEventData['redeem.requested'];
/** A redeem request became claimable: its id, shares, assets due and the claim call to make. */
export type RedeemClaimableEvent = WebhookEventData['redeem.claimable'];
export type ApyChangeEvent = WebhookEventData['apy_change'];
export type TvlAlertEvent = WebhookEventData['tvl_alert'];
export type VaultPauseEvent = WebhookEventData['vault_pause'];
export type ProductDeployedEvent = WebhookEventData['product.deployed'];

interface EventBase {
  /** The delivery's `webhook-id`: the same across retries and replays of one event. */
  id: string;
  /** The signed `webhook-timestamp`. */
  timestamp: Date;
}

/** A verified delivery of a type this SDK knows: switch on `type` after checking `known`. */
export type KnownWebhookEvent = {
  [T in WebhookEventType]: EventBase & { known: true; type: T; data: WebhookEventData[T] };
}[WebhookEventType];

/** A verified delivery of a type added after this SDK was built: acknowledge it and move on. */
export interface UnknownWebhookEvent extends EventBase {
  known: false;
  type: string;
  data: unknown;
}

export type WebhookEvent = KnownWebhookEvent | UnknownWebhookEvent;
