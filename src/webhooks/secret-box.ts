/**
 * Webhook secrets at rest. Outbound signing and inbound verification need the raw secret, so it is
 * stored encrypted with AES-256-GCM under the server's master key, never only hashed. The row's id
 * is bound in as additional data: a ciphertext copied onto another row does not decrypt.
 *
 * The master key comes from MASTER_KEY (64 hex characters or base64 of 32 bytes); without it, the
 * embedded default keeps one in DATA_DIR/master.key, created once with mode 0600. Every process that
 * shares a database must share the key.
 */

import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BaseError, type BaseErrorOptions } from '../errors.ts';

const FORMAT = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;

export interface SecretBox {
  /** `context` names the row the secret belongs to (e.g. a destination id). */
  encrypt(secret: string, context: string): string;
  decrypt(ciphertext: string, context: string): string;
  /**
   * A 32-byte key for `purpose`, derived from the master key (HMAC-SHA256): the same in every
   * process of one deployment, and never the master key itself.
   */
  deriveKey(purpose: string): Buffer;
}

export class MasterKeyError extends BaseError<'master_key_invalid'> {
  override name = 'MasterKeyError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('master_key_invalid', message, options);
  }
}

/** Parses MASTER_KEY: 64 hex characters, or base64 / base64url of exactly 32 bytes. */
export function parseMasterKey(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text)
    ? Buffer.from(text, 'hex')
    : Buffer.from(text, 'base64');
  if (key.length !== KEY_BYTES) {
    throw new MasterKeyError('expected 64 hex characters or the base64 of 32 bytes');
  }
  return key;
}

export function masterKeyFile(dataDir: string): string {
  return path.join(dataDir, 'master.key');
}

/**
 * Reads DATA_DIR/master.key, creating it on first use. Creation is race-free across processes: the
 * key is written to a private temporary file and hard-linked into place, which fails if another
 * process got there first (then its key is read).
 */
export function loadOrCreateMasterKey(dataDir: string): Buffer {
  const file = masterKeyFile(dataDir);
  try {
    return parseMasterKey(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dataDir, { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${randomBytes(KEY_BYTES).toString('hex')}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  return parseMasterKey(readFileSync(file, 'utf8'));
}

/** The master key of a configuration: MASTER_KEY when set, else the DATA_DIR file. */
export function masterKeyFor(config: {
  MASTER_KEY?: string | undefined;
  DATA_DIR: string;
}): Buffer {
  return config.MASTER_KEY
    ? parseMasterKey(config.MASTER_KEY)
    : loadOrCreateMasterKey(config.DATA_DIR);
}

export function createSecretBox(masterKey: Buffer): SecretBox {
  if (masterKey.length !== KEY_BYTES) throw new MasterKeyError('the master key must be 32 bytes');
  const key = Buffer.from(masterKey);
  return {
    deriveKey(purpose) {
      return createHmac('sha256', key).update(`partner-yield derived key: ${purpose}`).digest();
    },
    encrypt(secret, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [
        FORMAT,
        iv.toString('base64url'),
        tag.toString('base64url'),
        ct.toString('base64url'),
      ].join(':');
    },
    decrypt(ciphertext, context) {
      const [format, iv, tag, ct] = ciphertext.split(':');
      if (format !== FORMAT || !iv || !tag || ct === undefined) {
        throw new MasterKeyError('unrecognised secret ciphertext');
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      try {
        return Buffer.concat([
          decipher.update(Buffer.from(ct, 'base64url')),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        throw new MasterKeyError(
          'a stored secret does not decrypt: the master key differs from the one that encrypted it',
        );
      }
    },
  };
}

/**
 * A new outbound destination secret: `whsec_` and 32 random bytes in standard base64 (with its
 * `=`), the form Standard Webhooks libraries decode into their HMAC key.
 */
export function generateDestinationSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A new inbound signing secret: `whsec_` and 32 random bytes, base64url. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * What may be shown of a secret: a short SHA-256 fingerprint, enough to tell which secret a
 * receiver holds, useless for signing.
 */
export function secretFingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 16)}`;
}
