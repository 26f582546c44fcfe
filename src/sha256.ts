/**
 * SHA-256 in one call. crypto.hash (Node ≥ 20.12) digests without a Hash object per call: every
 * API request hashes its key, every inbound event its body, and the Hash objects were a few % of
 * the API's CPU under load (#33 item 7). Not in Node 20's type definitions, hence the cast; the
 * fallback keeps older runtimes working.
 */
import * as crypto from 'node:crypto';

const oneShot = (
  crypto as unknown as {
    hash?: (
      algorithm: string,
      data: string | Buffer,
      outputEncoding: 'buffer' | 'base64url',
    ) => unknown;
  }
).hash;

/** The SHA-256 of `data` (a string is hashed as UTF-8). */
export function sha256(data: string | Buffer): Buffer {
  return oneShot
    ? (oneShot('sha256', data, 'buffer') as Buffer)
    : crypto.createHash('sha256').update(data).digest();
}

/** The same digest as base64url. */
export function sha256Base64url(data: string | Buffer): string {
  return oneShot
    ? (oneShot('sha256', data, 'base64url') as string)
    : sha256(data).toString('base64url');
}
