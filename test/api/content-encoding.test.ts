/** Accept-Encoding parsing for the gzip of cached answers (RFC 9110 §12.5.3 weights). */
import { describe, expect, it } from 'vitest';
import { acceptsGzip } from '../../src/http/content-encoding.ts';

describe('acceptsGzip', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['identity', false],
    ['br', false],
    ['deflate, br', false],
    ['gzip', true],
    ['GZIP', true],
    ['x-gzip', true],
    ['gzip, deflate, br', true], // what fetch (undici) sends
    ['br;q=1.0, gzip;q=0.8, *;q=0.1', true],
    ['gzip;q=0', false],
    ['gzip;q=0.000', false],
    ['gzip; q=0.5', true],
    ['gzip;q=abc', false],
    ['*', true],
    ['*;q=0', false],
    ['br, *;q=0.5', true],
    ['gzip;q=0, *', false], // gzip named and refused: the wildcard does not bring it back
    [['deflate', 'gzip'], true], // a repeated header
    [' , ;q=1, gzip', true],
  ] as const)('%j → %s', (header, expected) => {
    expect(acceptsGzip(header as string | string[] | undefined)).toBe(expected);
  });
});
