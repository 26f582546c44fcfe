/**
 * Webhook signatures, both directions: lowercase hex HMAC-SHA256 of the exact bytes of the body,
 * keyed with the whole secret string (`whsec_…`) as UTF-8. Verification compares in constant time
 * and never parses or re-serialises the body.
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
