/**
 * The return path a sign-in carries (#passkey removal's re-authentication): only a path of the
 * portal's own comes back out; every way of naming another site, or of climbing out of the
 * portal's prefix, falls back to the default. No open redirect.
 */
import { describe, expect, it } from 'vitest';
import { returnPath, returnQuery } from '../../src/portal/return-path.ts';

const FALLBACK = '/portal/live/keys';
const check = (raw: unknown, base = '/portal') => returnPath(raw, base, FALLBACK);

describe('returnPath', () => {
  it('keeps a path under the portal prefix, with its query', () => {
    expect(check('/portal/live/account/passkeys/cred-1/remove')).toBe(
      '/portal/live/account/passkeys/cred-1/remove',
    );
    expect(check('/portal/test/team?invited=a%40b.example')).toBe(
      '/portal/test/team?invited=a%40b.example',
    );
    expect(check('/portal')).toBe('/portal');
    // A portal on its own origin: any same-origin path.
    expect(check('/live/account', '')).toBe('/live/account');
  });

  it.each([
    // Other sites, as written.
    '//evil.com',
    '//evil.com/portal/live/keys',
    '/\\evil.com',
    '\\\\evil.com',
    '/portal/\\/evil.com',
    '/portal//evil.com',
    'https://evil.com',
    'https://evil.com/portal/live/keys',
    'javascript:alert(1)',
    'data:text/html,hi',
    'evil.com',
    'portal/live/keys',
    // The same, percent-encoded (once or twice).
    '%2F%2Fevil.com',
    '/%2Fevil.com',
    '/portal/%2F%2Fevil.com',
    '/portal/%2f/evil.com',
    '/%5Cevil.com',
    '/portal/%5C%5Cevil.com',
    'https%3A%2F%2Fevil.com',
    '%252F%252Fevil.com',
    '/portal/%0d%0aLocation:%20https://evil.com',
    // Control characters, spaces, a fragment.
    '/portal/live/keys\r\nLocation: https://evil.com',
    '/portal/live/keys\u0000',
    '/portal/live/\tkeys',
    '/portal/live keys',
    '/portal/live/keys#x',
    // Out of the prefix: other paths of the origin, dot segments, a prefix look-alike.
    '/',
    '/api/partner/products',
    '/portalx/live/keys',
    '/portal/../api/partner/products',
    '/portal/./live/keys',
    '/portal/%2e%2e/api',
    // Not a path at all.
    '',
    `/portal/${'a'.repeat(600)}`,
  ])('refuses %j', (raw) => {
    expect(check(raw)).toBe(FALLBACK);
  });

  it('refuses what is not a string', () => {
    for (const raw of [undefined, null, 42, ['/portal/live/keys'], { path: '/portal' }]) {
      expect(check(raw)).toBe(FALLBACK);
    }
  });

  it('refuses a scheme-relative or backslash path on a portal with its own origin too', () => {
    for (const raw of ['//evil.com', '/\\evil.com', '/%2F/evil.com', 'https://evil.com']) {
      expect(check(raw, '')).toBe(FALLBACK);
    }
  });

  it('writes the query that carries a path', () => {
    expect(returnQuery('/portal/live/account')).toBe('?return_to=%2Fportal%2Flive%2Faccount');
    expect(returnQuery('/portal/a?b=c', '&')).toBe('&return_to=%2Fportal%2Fa%3Fb%3Dc');
    expect(returnQuery(undefined)).toBe('');
  });
});
