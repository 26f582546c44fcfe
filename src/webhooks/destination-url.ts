/**
 * Validation of a destination URL when it is added: HTTPS only (plain HTTP is never delivered to),
 * a host, no credentials, no fragment. Whether the host may be reached is decided at send time, on
 * the addresses it resolves to then (see address-policy.ts).
 */

import { BaseError, type BaseErrorOptions } from '../errors.ts';
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
