/**
 * Validation of a destination URL when it is added or edited: HTTPS only (plain HTTP is never
 * delivered to), a host, no credentials, no fragment; and a host written as an IP address must be
 * one the sender's address policy lets through (refusePrivateLiteral). A host name is judged at
 * send time only, on the addresses it resolves to then (see address-policy.ts): DNS answers change,
 * so resolving it here would prove nothing.
 */

import { isIPv4, isIPv6 } from 'node:net';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import type { AddressPolicy, AddressVerdict } from './address-policy.ts';
export class DestinationUrlError extends BaseError<'destination_url_invalid'> {
  override name = 'DestinationUrlError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('destination_url_invalid', message, options);
  }
}

export function parseDestinationUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new DestinationUrlError(`"${raw}" is not a URL`);
  }
  if (url.protocol !== 'https:') {
    throw new DestinationUrlError(
      url.protocol === 'http:'
        ? 'webhook destinations must be https:// URLs (got http); plain HTTP is never delivered to'
        : `webhook destinations must be https:// URLs (got ${url.protocol.replace(/:$/, '')})`,
    );
  }
  if (!url.hostname) throw new DestinationUrlError('the URL has no host');
  if (url.username || url.password) {
    throw new DestinationUrlError('the URL must not carry credentials; use the signature instead');
  }
  if (url.hash) throw new DestinationUrlError('the URL must not have a #fragment');
  return url;
}

/** A URL whose host is an IP literal the address policy refuses (the sender would never connect). */
export class DestinationAddressError extends DestinationUrlError {
  override name = 'DestinationAddressError';
  /** The host as written in the URL (IPv6 in brackets). */
  readonly host: string;
  readonly verdict: AddressVerdict;
  constructor(host: string, verdict: AddressVerdict) {
    // An IPv4-mapped IPv6 address is judged as the IPv4 address it maps: name that one too.
    const mapped =
      host.startsWith('[') && !verdict.address.includes(':') ? ` (${verdict.address})` : '';
    super(
      `${host}${mapped} is ${rangeWords(verdict.range)} address; webhooks are sent only to public ` +
        'addresses: use a public host name or address',
    );
    this.host = host;
    this.verdict = verdict;
  }
}

/** ipaddr.js's range names (and address-policy's own) as words a partner reads. */
function rangeWords(range: string): string {
  switch (range) {
    case 'private':
      return 'a private';
    case 'loopback':
      return 'a loopback';
    case 'linkLocal':
      return 'a link-local';
    case 'uniqueLocal':
      return 'a unique-local (private)';
    case 'carrierGradeNat':
      return 'a shared (carrier-grade NAT)';
    case 'unspecified':
      return 'the unspecified';
    case 'broadcast':
      return 'the broadcast';
    case 'multicast':
      return 'a multicast';
    case 'ipv4Compatible':
      return 'an IPv4-compatible IPv6';
    default:
      return `a reserved (${range})`;
  }
}

/**
 * Refuses a URL whose host is an IP literal that `policy` (the sender's) refuses: private, loopback,
 * link-local, unique-local, IPv4-mapped forms of these and the other non-public ranges, unless the
 * operator's allowlist lets it through. Host names pass: they are judged at send time.
 */
export function refusePrivateLiteral(url: URL, policy: AddressPolicy): void {
  // The WHATWG parser has already made any IPv4 form (0x7f.1, 2130706433, 127.1) dotted-quad, and
  // IPv6 canonical in brackets.
  const host = url.hostname;
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (!(isIPv4(literal) || (host.startsWith('[') && isIPv6(literal)))) return;
  const verdict = policy.check(literal);
  if (!verdict.allowed) throw new DestinationAddressError(host, verdict);
}
