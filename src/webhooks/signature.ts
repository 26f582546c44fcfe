/**
 * Webhook signatures.
 *
 * The service's own scheme, both directions (`X-Service-Signature`, the spec's): lowercase hex
 * HMAC-SHA256 of the exact bytes of the body, keyed with the whole secret string (`whsec_…`) as
 * UTF-8. Verification compares in constant time and never parses or re-serialises the body.
 *
 * Outbound deliveries also carry the Standard Webhooks headers (https://www.standardwebhooks.com),
 * so that a receiver can verify them with an off-the-shelf library (`standardwebhooks`, Svix's):
 * `webhook-id` (the event id, the same on every attempt and replay: the dedupe key of a receiver),
 * `webhook-timestamp` (Unix seconds of the attempt, signed: replays outside a tolerance are
 * refused) and `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256 of
 * "{id}.{timestamp}.{body}">`, keyed with the base64-decoded part of the secret after `whsec_`.
 * During a rotation's grace period it carries one signature per valid secret, the new one first.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export function signPayload(secret: string, body: Buffer | string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

const SIGNATURE = /^[0-9a-f]{64}$/;

/** True when `presented` is the signature of `body` under `secret`. */
export function verifySignature(
  secret: string,
  body: Buffer | string,
  presented: string | undefined,
): boolean {
  if (presented === undefined || !SIGNATURE.test(presented)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(presented, 'hex'));
}

const SECRET_PREFIX = 'whsec_';

/**
 * The Standard Webhooks key of a secret: the bytes its base64 part (after `whsec_`) encodes.
 * Node's decoder reads both alphabets, so secrets made before standard base64 (base64url) still
 * give their bytes; the `standardwebhooks` library itself reads standard base64 only (see
 * docs/webhooks-outbound.md for those older secrets).
 */
export function standardWebhookKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new Error('a webhook secret encodes no key');
  return key;
}

/** One `v1,<base64>` signature of a Standard Webhooks message. */
export function signStandard(
  key: Buffer,
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.`).update(body).digest('base64')}`;
}

/** A signing secret of a destination, with its Standard Webhooks key derived once. */
export interface SigningSecret {
  secret: string;
  key: Buffer;
}

export function signingSecret(secret: string): SigningSecret {
  return { secret, key: standardWebhookKey(secret) };
}

export interface DeliverySignature {
  /** `X-Service-Signature`: the current secret's. */
  serviceSignature: string;
  /** `webhook-signature`: one `v1,…` per secret, space-separated (current first). */
  webhookSignature?: string;
}

/**
 * Signs one delivery attempt. `secrets` are the destination's valid secrets, the current one
 * first (then the previous one during a rotation's grace period). `standard: false` signs the
 * service scheme only (the benchmark's baseline of what signing cost before).
 */
export function signDelivery(
  secrets: readonly [SigningSecret, ...SigningSecret[]],
  eventId: string,
  timestampSeconds: number,
  body: string,
  standard = true,
): DeliverySignature {
  const serviceSignature = signPayload(secrets[0].secret, body);
  if (!standard) return { serviceSignature };
  return {
    serviceSignature,
    webhookSignature: secrets
      .map((s) => signStandard(s.key, eventId, timestampSeconds, body))
      .join(' '),
  };
}
