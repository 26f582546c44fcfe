/**
 * The portal's public address: PORTAL_PUBLIC_URL when set, else `/portal` on the address the
 * service listens on. A loopback or wildcard host becomes `localhost`: browsers accept `localhost`
 * (not an IP address) as a WebAuthn relying party, so passkeys work on a developer's machine.
 */
export function portalPublicUrl(
  config: {
    PORTAL_PUBLIC_URL: string | undefined;
    HOST: string;
    PORT: number;
  },
  listeningPort?: number,
): string {
  if (config.PORTAL_PUBLIC_URL) return config.PORTAL_PUBLIC_URL;
  const loopback = ['127.0.0.1', '::1', '0.0.0.0', '::', 'localhost'].includes(config.HOST);
  const host = loopback
    ? 'localhost'
    : config.HOST.includes(':')
      ? `[${config.HOST}]`
      : config.HOST;
  return `http://${host}:${listeningPort ?? config.PORT}/portal`;
}
