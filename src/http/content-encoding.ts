/**
 * gzip for the cached read endpoints (products, product detail, apy-history, fee-stats). Their
 * bodies are compressed once per cache entry, not per request, and sent compressed to clients whose
 * Accept-Encoding takes gzip (fetch, browsers and most HTTP clients send it): a 365-day fee-stats
 * answer is ~6× smaller. Everyone else gets the same bytes uncompressed. Bodies under 1 KiB are
 * always sent as they are: gzip would save little and cost the client a decode.
 *
 * Why by hand, beside @fastify/compress (which the portal's pages use): that plugin compresses
 * every response anew, while these bodies are compressed once per cache entry (read-cache.ts) or
 * once at start (the embed's and the portal's static files), so a hit costs no compression at all.
 * And acceptsGzip below reads the header as RFC 9110 says, where the negotiator those plugins use
 * does not: `gzip;q=0, *` refuses gzip, and names are case-insensitive (test/api/content-encoding).
 */
export const MIN_GZIP_BYTES = 1024;

/**
 * Whether an Accept-Encoding header (RFC 9110 §12.5.3) takes gzip: `gzip` or `x-gzip` with a
 * non-zero weight, or `*` with one when gzip is not listed. Absent or empty: no.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  let star: boolean | undefined;
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [rawName, ...params] = part.split(';');
    const name = rawName?.trim().toLowerCase();
    if (!name) continue;
    let weight = 1;
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k?.trim().toLowerCase() === 'q') weight = Number(v?.trim());
    }
    const accepted = Number.isFinite(weight) && weight > 0;
    if (name === 'gzip' || name === 'x-gzip') return accepted;
    if (name === '*') star = accepted;
  }
  return star === true;
}
