import { describe, expect, it } from 'vitest';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';

const BLOCKED: Array<[string, string]> = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.254', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'carrierGradeNat'],
  ['100.127.255.254', 'carrierGradeNat'],
  ['169.254.169.254', 'linkLocal'],
  ['fe80::1', 'linkLocal'],
  ['fc00::1', 'uniqueLocal'],
  ['fd00:ec2::254', 'uniqueLocal'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  ['0.0.0.0', 'unspecified'],
  ['::', 'unspecified'],
  ['255.255.255.255', 'broadcast'],
  ['192.0.2.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  ['2001:db8::1', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.19.255.254', 'reserved'],
  ['240.0.0.1', 'reserved'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:169.254.169.254', 'linkLocal'],
  ['64:ff9b::7f00:1', 'rfc6052'],
  ['2002:7f00:1::1', '6to4'],
  ['2001::1', 'teredo'],
];

describe('address policy', () => {
  const policy = createAddressPolicy();

  it.each(BLOCKED)('refuses %s (%s)', (address, range) => {
    const verdict = policy.check(address);
    expect(verdict.allowed).toBe(false);
    expect(verdict.range).toBe(range);
  });

  it.each(['8.8.8.8', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001:80b::200e'])(
    'allows public %s',
    (address) => {
      const verdict = policy.check(address);
      expect(verdict).toMatchObject({ allowed: true, range: 'unicast' });
    },
  );

  it('judges IPv4-mapped IPv6 as the IPv4 address it maps', () => {
    expect(policy.check('::ffff:7f00:1').address).toBe('127.0.0.1');
    expect(policy.check('::ffff:8.8.8.8')).toMatchObject({ allowed: true, address: '8.8.8.8' });
  });

  it('refuses what is not an address', () => {
    for (const raw of ['', 'localhost', '1.2.3.4.5', '::g', '127.0.0.1/8']) {
      expect(policy.check(raw)).toMatchObject({ allowed: false, range: 'invalid' });
    }
  });

  it('an allowlist lets its ranges through and nothing else', () => {
    const allow = createAddressPolicy(parseCidrList('127.0.0.0/8, ::1'));
    expect(allow.check('127.0.0.1').allowed).toBe(true);
    expect(allow.check('127.0.0.2').allowed).toBe(true);
    expect(allow.check('::ffff:127.0.0.1').allowed).toBe(true);
    expect(allow.check('::1').allowed).toBe(true);
    expect(allow.check('10.0.0.1').allowed).toBe(false);
    expect(allow.check('169.254.169.254').allowed).toBe(false);
    expect(allow.check('fe80::1').allowed).toBe(false);
    expect(allow.check('8.8.8.8').allowed).toBe(true);
  });

  it('a single-host allowlist entry is a /32', () => {
    const allow = createAddressPolicy(parseCidrList('127.0.0.2'));
    expect(allow.check('127.0.0.2').allowed).toBe(true);
    expect(allow.check('127.0.0.1').allowed).toBe(false);
  });
});

describe('parseCidrList', () => {
  it('parses a comma-separated list, blanks ignored', () => {
    const list = parseCidrList(' 127.0.0.0/8 ,, ::1/128, 10.1.2.3 ');
    expect(list.map((c) => c.text)).toEqual(['127.0.0.0/8', '::1/128', '10.1.2.3']);
    expect(list.map((c) => c.range[1])).toEqual([8, 128, 32]);
    expect(parseCidrList('')).toEqual([]);
  });

  it.each([
    'garbage',
    '127.0.0.0/8,garbage',
    '10.0.0.0/33',
    '::1/129',
    '1.2.3.4/x',
    '10.0.0.0/8/8',
    '300.1.1.1',
    'localhost',
  ])('throws on %j', (raw) => {
    expect(() => parseCidrList(raw)).toThrow(Error);
  });
});

describe('address policy edge cases', () => {
  it('refuses IPv4-compatible IPv6 (::/96), which can embed any IPv4 address', () => {
    const policy = createAddressPolicy();
    expect(policy.check('::7f00:1')).toMatchObject({ allowed: false, range: 'ipv4Compatible' });
    expect(policy.check('::a00:1')).toMatchObject({ allowed: false, range: 'ipv4Compatible' });
  });

  it('an allowlist entry written as an IPv4-mapped range applies to the IPv4 addresses', () => {
    const policy = createAddressPolicy(parseCidrList('::ffff:127.0.0.0/104'));
    expect(policy.check('127.0.0.1').allowed).toBe(true);
    expect(policy.check('::ffff:127.0.0.1').allowed).toBe(true);
    expect(policy.check('10.0.0.1').allowed).toBe(false);
  });

  it('names the bad entry of a CIDR list', () => {
    expect(() => parseCidrList('127.0.0.0/8, nope/3')).toThrow('invalid CIDR "nope/3"');
  });
});
