/**
 * The embed page's Content-Security-Policy. `frame-ancestors` lists exactly the partner
 * environment's allowed origins ('none' when it has none: nobody may frame it, and a top-level
 * visit, the "open in a new tab" fallback, still works). The rest keeps the page to its own
 * scripts and styles: the wallet is reached through the injected provider or the host bridge,
 * never by the page fetching another origin.
 */
export function embedCsp(allowedOrigins: readonly string[]): string {
  const ancestors = allowedOrigins.length > 0 ? allowedOrigins.join(' ') : "'none'";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${ancestors}`,
  ].join('; ');
}

/** The demo host page frames the embed from its own origin and loads the host helper script. */
export function hostExampleCsp(embedOrigin: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' ${embedOrigin}`,
    "style-src 'self' 'unsafe-inline'",
    `frame-src ${embedOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/**
 * An error page (unknown embed id or product) says why in the frame, so a partner wiring the
 * iframe sees the problem; it shows nothing of anyone's, so any parent may frame it.
 */
export const ERROR_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors *";
