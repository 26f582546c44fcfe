/** The embed's public address (`{embed_url}`): EMBED_PUBLIC_URL, else /embed where we listen. */
export function embedPublicUrl(
  config: { EMBED_PUBLIC_URL: string | undefined; HOST: string; PORT: number },
  listeningPort?: number,
): string {
  if (config.EMBED_PUBLIC_URL) return config.EMBED_PUBLIC_URL;
  const wildcard = config.HOST === '0.0.0.0' || config.HOST === '::';
  const host = wildcard
    ? '127.0.0.1'
    : config.HOST.includes(':')
      ? `[${config.HOST}]`
      : config.HOST;
  return `http://${host}:${listeningPort ?? config.PORT}/embed`;
}

/**
 * A second loopback origin for the same server (127.0.0.1 ↔ localhost): the demo's host page is
 * served there so that it frames the embed from another origin, as a partner's page would.
 */
export function otherLoopbackOrigin(embedUrl: string): string | undefined {
  const u = new URL(embedUrl);
  if (u.hostname === '127.0.0.1') u.hostname = 'localhost';
  else if (u.hostname === 'localhost') u.hostname = '127.0.0.1';
  else return undefined;
  return u.origin;
}
