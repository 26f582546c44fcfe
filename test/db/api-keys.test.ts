/** API keys on every engine: format, hashed storage, lookup, revocation, listing. */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  apiKeyDigest,
  environmentOfKey,
  hashApiKey,
  maskKey,
} from '../../src/db/api-key-material.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

describe('key format', () => {
  it('recognises only well-formed keys of our two prefixes', () => {
    const body = 'A'.repeat(43);
    expect(environmentOfKey(`svc_live_${body}`)).toBe('live');
    expect(environmentOfKey(`svc_test_${body}`)).toBe('test');
    for (const bad of [
      '',
      body,
      `svc_prod_${body}`,
      `svc_live_${body.slice(1)}`,
      `svc_live_${body}A`,
      `svc_live_${'A'.repeat(42)}+`,
      `SVC_LIVE_${body}`,
    ]) {
      expect(environmentOfKey(bad), bad).toBeUndefined();
    }
  });
});

describe.each(storageEngines())('api keys on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });

  it('creates a key shown once, stores only its hash, finds it, and revokes it', async () => {
    const t = await freshDatabase(engine);
    opened.push(t);
    const partner = await createPartnersRepo(t.db).create('Acme');
    const keys = createApiKeysRepo(t.db);
    const { key, record } = await keys.create(partner.id, 'live', 'backend');
    expect(key).toMatch(/^svc_live_[A-Za-z0-9_-]{43}$/);
    expect(record).toMatchObject({
      partnerId: partner.id,
      partnerName: 'Acme',
      environment: 'live',
      prefix: 'svc_live_',
      last4: key.slice(-4),
      name: 'backend',
      revokedAt: null,
    });
    expect(maskKey(record.prefix, record.last4)).toBe(`svc_live_…${key.slice(-4)}`);

    // Nothing stored can give the key back: no column holds it.
    const { rows } = await t.db.query<Record<string, unknown>>('SELECT * FROM api_keys');
    const stored = JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? String(v) : v));
    expect(stored).not.toContain(key.slice(9, 30));
    expect(Buffer.from(rows[0]!.key_hash as Uint8Array).equals(hashApiKey(key))).toBe(true);

    expect((await keys.findByKey(key))?.id).toBe(record.id);
    expect(
      await keys.findByKey(`${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`),
    ).toBeUndefined();
    expect(await keys.findByKey('not-a-key')).toBeUndefined();

    expect(await keys.revoke(record.id)).toBe(true);
    expect(await keys.revoke(record.id)).toBe(false);
    expect((await keys.findByKey(key))?.revokedAt).toBeInstanceOf(Date); // row kept: revoked, not unknown
  });

  it('lists keys per partner without any secret', async () => {
    const t = await freshDatabase(engine);
    opened.push(t);
    const partners = createPartnersRepo(t.db);
    const a = await partners.create('A');
    const b = await partners.create('B');
    const keys = createApiKeysRepo(t.db);
    const k1 = await keys.create(a.id, 'live');
    await keys.create(a.id, 'test');
    await keys.create(b.id, 'live');
    const listed = await keys.list(a.id);
    expect(listed.map((k) => k.environment)).toEqual(['live', 'test']);
    expect(JSON.stringify(listed)).not.toContain(k1.key);
    expect(await keys.list()).toHaveLength(3);
  });
});

describe('key digests', () => {
  it('are SHA-256 of the key, as bytes and as base64url', () => {
    for (const key of ['svc_live_abc', 'svc_test_ü✓', '']) {
      const expected = createHash('sha256').update(key, 'utf8').digest();
      expect(hashApiKey(key).equals(expected)).toBe(true);
      expect(apiKeyDigest(key)).toBe(expected.toString('base64url'));
    }
  });
});
