/**
 * Which addresses outbound webhooks may connect to: public unicast only. Loopback, private,
 * link-local (cloud metadata included), CGNAT, multicast, broadcast, unspecified, documentation,
 * benchmarking and other reserved ranges are refused, in IPv4 and IPv6, with IPv4-mapped IPv6
 * (`::ffff:127.0.0.1`) judged as the IPv4 address it maps, and the IPv6 translation and tunnelling
 * prefixes (NAT64, 6to4, Teredo) refused because they can embed any IPv4 address.
 *
 * Classification is ipaddr.js's range table; the operator allowlist (WEBHOOK_ALLOWED_CIDRS) lets
 * chosen ranges through, for development and tests.
 */
import ipaddr from 'ipaddr.js';

export interface Cidr {
  text: string;
  range: [ipaddr.IPv4 | ipaddr.IPv6, number];
}

/** Parses `a.b.c.d/n, x::/n`; an address without a prefix length is a single-host range. */
export function parseCidrList(raw: string): Cidr[] {
  const out: Cidr[] = [];
  for (const part of raw.split(',')) {
    const text = part.trim();
    if (!text) continue;
    let range: [ipaddr.IPv4 | ipaddr.IPv6, number];
    try {
      range = text.includes('/')
        ? ipaddr.parseCIDR(text)
        : ((): [ipaddr.IPv4 | ipaddr.IPv6, number] => {
            const address = ipaddr.parse(text);
            return [address, address.kind() === 'ipv4' ? 32 : 128];
          })();
    } catch {
      throw new Error(`invalid CIDR "${text}" in the list`);
    }
    // Mapped addresses are judged as IPv4, so an IPv4-mapped range is kept as its IPv4 range.
    const [base, bits] = range;
    if (base.kind() === 'ipv6' && (base as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      range = [(base as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    out.push({ text, range });
  }
  return out;
}

export interface AddressVerdict {
  allowed: boolean;
  /**
   * ipaddr.js's name of the range the address is in (`unicast` for public addresses), or
   * `ipv4Compatible` for ::/96.
   */
  range: string;
  /** The address in canonical form; IPv4-mapped IPv6 addresses become their IPv4 address. */
  address: string;
}

export interface AddressPolicy {
  check(address: string): AddressVerdict;
}

export function createAddressPolicy(allowlist: readonly Cidr[] = []): AddressPolicy {
  return {
    check(raw) {
      if (!ipaddr.isValid(raw)) return { allowed: false, range: 'invalid', address: raw };
      // process() turns IPv4-mapped IPv6 into the IPv4 address, so it gets IPv4's verdict.
      const address = ipaddr.process(raw);
      // IPv4-compatible IPv6 (::a.b.c.d, deprecated) can embed any IPv4 address: never public.
      const named = address.range();
      const range =
        named === 'unicast' &&
        address.kind() === 'ipv6' &&
        (address as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)
          ? 'ipv4Compatible'
          : named;
      const listed = allowlist.some(
        (c) => c.range[0].kind() === address.kind() && address.match(c.range),
      );
      return { allowed: range === 'unicast' || listed, range, address: address.toString() };
    },
  };
}

/**
 * The policy a configuration describes: public addresses and WEBHOOK_ALLOWED_CIDRS. The sender
 * enforces it at connect time (from-config.ts); adding or editing a destination
 * (operations/webhook-destinations.ts) refuses an IP literal it refuses, so both faces and the
 * sender agree when built from one configuration. Here, not in from-config.ts, so the CLI gets it
 * without loading the sender.
 */
export function configuredAddressPolicy(config: {
  WEBHOOK_ALLOWED_CIDRS: readonly Cidr[];
}): AddressPolicy {
  return createAddressPolicy(config.WEBHOOK_ALLOWED_CIDRS);
}
