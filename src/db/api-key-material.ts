/**
 * API key material: generation, hashing and the environment a key's prefix names. A key is
 * `svc_live_` or `svc_test_` followed by 43 base64url characters (32 random bytes). Only its SHA-256
 * is stored; lookups hash the presented key, so comparing stored and presented values never runs
 * over the secret itself, and the final equality check is constant-time.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sha256, sha256Base64url } from '../sha256.ts';
import type { Environment } from './products.ts';

export const KEY_PREFIX = { live: 'svc_live_', test: 'svc_test_' } as const satisfies Record<
  Environment,
  string
>;
const KEY_BODY = /^[A-Za-z0-9_-]{43}$/;

export function generateApiKey(environment: Environment): string {
  return `${KEY_PREFIX[environment]}${randomBytes(32).toString('base64url')}`;
}

export function hashApiKey(key: string): Buffer {
  return sha256(key);
}

/** The key's SHA-256 as base64url: the API's cache id for a key (never the key itself). */
export function apiKeyDigest(key: string): string {
  return sha256Base64url(key);
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
