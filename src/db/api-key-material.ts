/**
 * API key material: generation, hashing and the environment a key's prefix names. A key is
 * `svc_live_` or `svc_test_` followed by 43 base64url characters (32 random bytes). Only its SHA-256
 * is stored; lookups hash the presented key, so comparing stored and presented values never runs
 * over the secret itself, and the final equality check is constant-time.
 */
import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Environment } from './products.ts';

export const KEY_PREFIX = { live: 'svc_live_', test: 'svc_test_' } as const satisfies Record<
  Environment,
  string
>;
const KEY_BODY = /^[A-Za-z0-9_-]{43}$/;

export function generateApiKey(environment: Environment): string {
  return `${KEY_PREFIX[environment]}${randomBytes(32).toString('base64url')}`;
}

/**
 * crypto.hash (Node ≥ 20.12): a one-shot digest without a Hash object per call. Every API request
 * hashes its key, and the Hash objects were ~3 % of the API's CPU under load. Not in the Node 20
 * type definitions, hence the cast; the fallback keeps older runtimes working.
 */
const oneShot = (
  crypto as unknown as {
    hash?: (algorithm: string, data: string, outputEncoding: 'buffer' | 'base64url') => unknown;
  }
).hash;

export function hashApiKey(key: string): Buffer {
  return oneShot
    ? (oneShot('sha256', key, 'buffer') as Buffer)
    : createHash('sha256').update(key, 'utf8').digest();
}

/** The key's SHA-256 as base64url: the API's cache id for a key (never the key itself). */
export function apiKeyDigest(key: string): string {
  return oneShot
    ? (oneShot('sha256', key, 'base64url') as string)
    : hashApiKey(key).toString('base64url');
}

/** The environment a key claims by its prefix, or undefined for a string that is no key of ours. */
export function environmentOfKey(key: string): Environment | undefined {
  for (const env of ['live', 'test'] as const) {
    if (key.startsWith(KEY_PREFIX[env]) && KEY_BODY.test(key.slice(KEY_PREFIX[env].length))) {
      return env;
    }
  }
  return undefined;
}

/** Constant-time equality of two hashes (equal length by construction). */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** How a key is shown after creation: prefix, an ellipsis and its last four characters. */
export function maskKey(prefix: string, last4: string): string {
  return `${prefix}…${last4}`;
}
