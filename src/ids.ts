/**
 * Prefixed random identifiers (`ptn_…`, `key_…`, `evt_…`): the prefix tells a reader of a log line
 * what the id names. 16 random bytes, base58 so ids are URL- and double-click-safe.
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export type IdPrefix = 'ptn' | 'prd' | 'key' | 'evt' | 'dlv' | 'whk' | 'req' | 'inb';

export function newId(prefix: IdPrefix, bytes = 16): string {
  let n = BigInt(`0x${randomBytes(bytes).toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  return `${prefix}_${out.padStart(22, '1')}`;
}
