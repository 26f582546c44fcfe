/**
 * @partner-yield/sdk: the API client, the webhook verifier and the inbound signer. The engine
 * helpers (which need viem) are in `@partner-yield/sdk/engine`.
 */
export { type ClientOptions, PartnerYieldClient } from './client.ts';
export {
  ApiError,
  ConnectionError,
  type ConnectionErrorCode,
  type ErrorCode,
  PartnerYieldError,
  type ResponseErrorCode,
  type WebhookErrorCode,
  WebhookVerificationError,
} from './errors.ts';
export type * from './events.ts';
export { WEBHOOK_EVENT_TYPES } from './events.ts';
export type { RequestOptions } from './http.ts';
export {
  type InboundEvent,
  type InboundEventData,
  type SubmittedDeposit,
  type SubmittedRedeem,
  signInbound,
} from './inbound.ts';
export { DEFAULT_RETRY_POLICY, type RetryInfo, type RetryPolicy } from './retry.ts';
export type * from './types.ts';
export { SDK_VERSION } from './version.ts';
export { type VerifyOptions, verifyWebhook, type WebhookHeaders } from './webhooks.ts';
