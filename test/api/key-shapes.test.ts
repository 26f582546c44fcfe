/**
 * What counts as key-shaped in a logged URL or a request id (src/http/key-shapes.ts): our keys and
 * secrets and random-looking runs are redacted; what the access log is read for (slugs, addresses,
 * transaction hashes, UUIDs, dates, amounts) is kept.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/http/access-log.ts';
import { redactKeyShaped } from '../../src/http/key-shapes.ts';
import { isSafeRequestId } from '../../src/http/request-id.ts';

const key = () => `svc_live_${randomBytes(32).toString('base64url')}`;

describe('key-shaped strings', () => {
  it('redacts keys, secrets and random runs wherever they are in a URL', () => {
    for (let i = 0; i < 200; i++) {
      const k = key();
      const body = k.slice('svc_live_'.length);
      expect(redactUrl(`/api/partner/products/${k}/fee-stats`)).toBe(
        '/api/partner/products/svc_live_[redacted]/fee-stats',
      );
      expect(redactUrl(`/x?note=${encodeURIComponent(k)}`)).toBe('/x?note=svc_live_[redacted]');
      expect(redactUrl(`/x/${k.replaceAll('_', '%5F')}`)).not.toContain(body.slice(0, 20));
      // A key's body alone: redacted unless it happens to be hexadecimal or single-case (never
      // in 200 draws of 43 random base64url characters).
      expect(redactUrl(`/api/partner/products/${body}`)).not.toContain(body);
      expect(redactKeyShaped(`whsec_${randomBytes(32).toString('base64')}`)).toBe(
        'whsec_[redacted]',
      );
    }
  });

  it('keeps slugs, addresses, hashes, UUIDs and dates', () => {
    const kept = [
      '/api/partner/products/a-very-long-product-slug-with-many-parts-2026/apy-history?days=30',
      '/api/partner/products/core/position?address=0x52908400098527886E0F7030069857D2E4169EE7',
      `/api/partner/products/core/health?tx=0x${'aB3'.repeat(21)}c`,
      '/api/partner/products/core/fee-stats?from=2026-01-01&to=2026-03-31',
      '/api/partner/products/core/yield-calc?amount=123456789012345678901234567890123.5',
    ];
    for (const url of kept) expect(redactUrl(url)).toBe(url);
  });

  it('request ids: plain ones are accepted, key-shaped ones are not', () => {
    for (const id of [
      'abc-123',
      '550e8400-e29b-41d4-a716-446655440000',
      '4bf92f3577b34da6a3ce929d0e0e4736',
      'trace.1:2',
    ]) {
      expect(isSafeRequestId(id)).toBe(true);
    }
    const k = key();
    expect(isSafeRequestId(k)).toBe(false);
    expect(isSafeRequestId(k.slice('svc_live_'.length))).toBe(false);
    expect(isSafeRequestId('svc_test_short')).toBe(false);
    expect(isSafeRequestId('a b')).toBe(false);
  });
});
