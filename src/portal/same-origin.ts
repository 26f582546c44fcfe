/** Where a state change may come from: the portal's own pages only. */
import type { FastifyRequest } from 'fastify';

export /**
 * Whether a state change comes from the portal's own origin. `Sec-Fetch-Site` (sent by every
 * current browser) must be `same-origin`; `Origin`, when present and not `null`, must be this
 * request's own origin or the portal's public one. A client that sends neither (not a browser) is
 * judged by the CSRF token alone.
 */
function sameOrigin(request: FastifyRequest, publicUrl: () => string): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = request.headers.origin;
  // `null` says nothing: the portal's own pages send it (their Referrer-Policy is no-referrer,
  // which makes a browser serialise a form POST's origin as null); Sec-Fetch-Site above decides.
  if (origin === undefined || origin === 'null') return true;
  const own = `${request.protocol}://${request.headers.host ?? ''}`;
  let configured: string | undefined;
  try {
    configured = new URL(publicUrl()).origin;
  } catch {
    configured = undefined;
  }
  return origin === own || origin === configured;
}
