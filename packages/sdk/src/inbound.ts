/**
 * Signing for the service's inbound endpoint: `X-Service-Signature` is the lowercase hex
 * HMAC-SHA256 of the exact body bytes, keyed with the whole inbound secret (`whsec_…`) as UTF-8.
 */
import { type Bytes, hmacSha256, toHex, utf8 } from './crypto.ts';
import type { InboundEventType } from './types.ts';

export async function signInbound(body: string | Uint8Array, secret: string): Promise<string> {
  if (typeof secret !== 'string' || secret === '') {
    throw new TypeError('signInbound needs the inbound secret (whsec_…) as a string.');
  }
  const bytes = typeof body === 'string' ? utf8(body) : (new Uint8Array(body) as Bytes);
  return toHex(await hmacSha256(utf8(secret), bytes));
}

/** What a `deposit.submitted` / `redeem.submitted` event tells the service. */
export interface SubmittedDeposit {
  product_slug: string;
  chain_id: number;
  tx_hash: string;
  user_address: string;
  /** Decimal string in whole asset units. */
  amount: string;
}
export interface SubmittedRedeem {
  product_slug: string;
  chain_id: number;
  tx_hash: string;
  user_address: string;
  /** Decimal string in whole share units. */
  shares: string;
}

export type InboundEventData = {
  ping: Record<string, unknown>;
  'deposit.submitted': SubmittedDeposit;
  'redeem.submitted': SubmittedRedeem;
};

/**
 * When the event happened and its key on your side. A resend must carry the same body under the
 * same key (another body under a used key is `409 idempotency_conflict`), so a key you choose comes
 * with the time you keep beside it: a default of "now" would differ at every call.
 */
type InboundIdentity =
  | {
      /** Omitted: a random UUID, reused by this call's own retries only. */
      idempotencyKey?: undefined;
      /** ISO 8601 UTC; defaults to now. */
      occurred_at?: string | Date;
    }
  | {
      /**
       * Unique key of this event on your side (1–255 printable ASCII), kept with the event. Send
       * the same key and the same `occurred_at` and data when you send the event again: the
       * service answers `duplicate: true` and does nothing twice.
       */
      idempotencyKey: string;
      /** ISO 8601 UTC: when the event happened (say, when the transaction was submitted). */
      occurred_at: string | Date;
    };

export type InboundEvent = {
  [T in InboundEventType]: {
    type: T;
    data: T extends keyof InboundEventData ? InboundEventData[T] : Record<string, unknown>;
  } & InboundIdentity;
}[InboundEventType];
