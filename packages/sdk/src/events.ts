/**
 * Payloads of the outbound events, as the spec and DECISIONS define them. The body of a delivery is
 * exactly one of these objects; the type travels in the `X-Service-Event` header. New types appear
 * over time: verifyWebhook returns them as unknown events, never rejects them.
 */

/** `deposit.confirmed` and `redeem.confirmed`: one chain log at confirmation depth. */
export interface ConfirmedEvent {
  slug: string;
  chain_id: number;
  tx_hash: string;
  block_number: number;
  log_index: number;
  /** The share owner of the log. */
  user_address: string;
  /** Decimal string in whole asset units. */
  amount: string;
  /** Decimal string in whole share units. */
  shares: string;
  asset_symbol: string;
  /** Block time, ISO 8601 UTC. */
  occurred_at: string;
}

export interface RedeemRequestedEvent {
  slug: string;
  chain_id: number;
  tx_hash: string;
  log_index: number;
  user_address: string;
  shares: string;
  /** Hex id of the request; pass it to the engine's claim. */
  request_id: string;
  estimated_settlement_at: string;
  occurred_at: string;
}

export interface ApyChangeEvent {
  slug: string;
  /** JSON numbers, as the spec types them (decimal fractions). */
  previous_apy: number;
  current_apy: number;
  /** Percent, 2 decimals; negative for a fall. */
  change_pct: number;
  /** YYYY-MM-DD (UTC). */
  date: string;
}

export interface TvlAlertEvent {
  slug: string;
  /** Decimal strings in whole asset units. */
  previous_tvl: string;
  current_tvl: string;
  change_pct: number;
  date: string;
}

export interface VaultPauseEvent {
  slug: string;
  status: string;
}

export interface ProductDeployedEvent {
  slug: string;
  chain_id: number;
  engine_contract_address: string;
  underlying_vault_address: string;
  status: string;
  occurred_at: string;
}

export interface WebhookEventData {
  'deposit.confirmed': ConfirmedEvent;
  'redeem.confirmed': ConfirmedEvent;
  'redeem.requested': RedeemRequestedEvent;
  apy_change: ApyChangeEvent;
  tvl_alert: TvlAlertEvent;
  vault_pause: VaultPauseEvent;
  'product.deployed': ProductDeployedEvent;
}

export type WebhookEventType = keyof WebhookEventData;

export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = [
  'deposit.confirmed',
  'redeem.requested',
  'redeem.confirmed',
  'apy_change',
  'tvl_alert',
  'vault_pause',
  'product.deployed',
];

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
