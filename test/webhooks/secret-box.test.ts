/**
 * Secrets at rest: AES-256-GCM round trip bound to its row, the master key from MASTER_KEY or
 * created once in DATA_DIR (mode 0600, the same key for every process that loads it), and a bad
 * MASTER_KEY refused without being echoed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  createSecretBox,
  generateWebhookSecret,
  loadOrCreateMasterKey,
  masterKeyFile,
  parseMasterKey,
  secretFingerprint,
} from '../../src/webhooks/secret-box.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'pys-secret-box-'));
  dirs.push(d);
  return d;
};

describe('secret box', () => {
  it('round-trips a secret, never storing it in clear, and binds it to its row', () => {
    const box = createSecretBox(randomBytes(32));
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const stored = box.encrypt(secret, 'webhook_destination:whk_1');
    expect(stored).not.toContain(secret.slice(6));
    expect(box.decrypt(stored, 'webhook_destination:whk_1')).toBe(secret);
    // Two encryptions of one secret differ (fresh IV).
    expect(box.encrypt(secret, 'webhook_destination:whk_1')).not.toBe(stored);
    // Copied onto another row, or tampered with, it does not decrypt.
    expect(() => box.decrypt(stored, 'webhook_destination:whk_2')).toThrow(/does not decrypt/);
    const [v, iv, tag, ct] = stored.split(':');
    // Flip one bit of the ciphertext itself (editing a base64 character can leave the bytes unchanged).
    const bytes = Buffer.from(ct!, 'base64url');
    bytes[0] = bytes[0]! ^ 0x01;
    const flipped = `${v}:${iv}:${tag}:${bytes.toString('base64url')}`;
    expect(() => box.decrypt(flipped, 'webhook_destination:whk_1')).toThrow(/does not decrypt/);
    // Another master key cannot read it.
    expect(() =>
      createSecretBox(randomBytes(32)).decrypt(stored, 'webhook_destination:whk_1'),
    ).toThrow();
  });

  it('shows a fingerprint that identifies a secret without revealing it', () => {
    const secret = generateWebhookSecret();
    const fp = secretFingerprint(secret);
    expect(fp).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(secretFingerprint(secret)).toBe(fp);
    expect(secretFingerprint(generateWebhookSecret())).not.toBe(fp);
  });

  it('creates DATA_DIR/master.key once, mode 0600, and every load reads the same key', () => {
    const dir = tempDir();
    const first = loadOrCreateMasterKey(dir);
    expect(first).toHaveLength(32);
    const file = masterKeyFile(dir);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadOrCreateMasterKey(dir).equals(first)).toBe(true);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.toString('hex'));
  });

  it('parses MASTER_KEY as 64 hex characters or base64 of 32 bytes', () => {
    const key = randomBytes(32);
    expect(parseMasterKey(key.toString('hex')).equals(key)).toBe(true);
    expect(parseMasterKey(key.toString('base64')).equals(key)).toBe(true);
    expect(() => parseMasterKey('too-short')).toThrow(/32 bytes/);
  });

  it('a bad MASTER_KEY stops the start with one line that does not echo it', () => {
    const bad = 'not-a-key-but-maybe-a-secret';
    let message = '';
    try {
      loadConfig({ MASTER_KEY: bad });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/^MASTER_KEY: expected/);
    expect(message).not.toContain(bad);
  });
});
