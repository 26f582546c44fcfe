/**
 * Prefixed random identifiers (`ptn_…`, `key_…`, `evt_…`): the prefix tells a reader of a log line
 * what the id names. 22 base58 characters (URL- and double-click-safe), each drawn uniformly from
 * the alphabet: 58^22 ≈ 2^128.9, at least the 16 random bytes the ids always carried.
 *
 * Fast path (the indexer makes tens of thousands per range): random bytes come from a pooled buffer
 * refilled 4 KiB at a time, and each character is one byte by rejection sampling (bytes >= 232 are
 * dropped so that `byte % 58` stays uniform) instead of a BigInt base conversion.
 */
import { randomFillSync } from 'node:crypto';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** 4 × 58: the largest multiple of 58 a byte can hold; bytes at or above it are rejected. */
const LIMIT = 232;
const ID_CHARS = 22;

/**
 * Every id prefix, and what it names. `dlv` and `emb` are made inside the database, by new_id()
 * (migration 0041), in this same format: deliveries are fanned out by one INSERT … SELECT, embed ids
 * by the trigger that creates a partner's settings. Request ids are not stored ids (x-request-id).
 */
export const ID_PREFIXES = {
  ptn: 'partner',
  prd: 'product',
  key: 'API key',
  evt: 'event',
  whk: 'webhook destination',
  mbr: 'portal member',
  aud: 'portal audit entry',
  dlv: 'webhook delivery (made by the database)',
  emb: 'embed id (made by the database)',
} as const;

export type IdPrefix = keyof typeof ID_PREFIXES;

const BASE58 = `[${ALPHABET}]{${ID_CHARS}}`;
/** Ids the database made before migration 0041: 32 hex digits. */
const LEGACY_DATABASE_ID = '[0-9a-f]{32}';
const ID_SHAPES = new Map<string, RegExp>(
  Object.keys(ID_PREFIXES).map((prefix) => [
    prefix,
    new RegExp(
      prefix === 'dlv' || prefix === 'emb'
        ? `^${prefix}_(${BASE58}|${LEGACY_DATABASE_ID})$`
        : `^${prefix}_${BASE58}$`,
    ),
  ]),
);

/** Whether `value` is an id of this kind as we make them (a cheap check before any lookup). */
export function isId(prefix: IdPrefix, value: string): boolean {
  return ID_SHAPES.get(prefix)!.test(value);
}

const pool = Buffer.alloc(4096);
let at = pool.length;

function randomByte(): number {
  if (at === pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  return pool[at++] as number;
}

/** `bytes`: the randomness the id must carry at least (16 → 22 characters, as always). */
export function newId(prefix: IdPrefix, bytes = 16): string {
  // ceil(bytes × 8 / log2(58)); 22 for the default 16 bytes.
  const chars = bytes === 16 ? ID_CHARS : Math.ceil((bytes * 8) / Math.log2(58));
  let out = `${prefix}_`;
  for (let i = 0; i < chars; ) {
    const b = randomByte();
    if (b < LIMIT) {
      out += ALPHABET[b % 58];
      i++;
    }
  }
  return out;
}
