/**
 * Where a sign-in returns to: a path of the portal's own, checked every time it is read (from a
 * query, a form field, a JSON body), so that a link someone else made cannot send a member to
 * another site after they sign in (no open redirect). Anything doubtful falls back to the default.
 *
 * Accepted: a relative path that starts with one "/" and lies under the portal's prefix (`/portal/…`,
 * or any path when the portal has its own origin), with an optional query. Refused: "//" anywhere
 * (a scheme-relative URL, or a path that browsers may fold), a backslash (browsers read "/\" as
 * "//"), a scheme, control characters and spaces, "." or ".." segments (which could climb out of
 * the prefix), a fragment, and any of these percent-encoded (the value is checked as given and
 * once decoded). Kept short: 512 characters.
 */

const MAX_LENGTH = 512;
const DOT_SEGMENT = /(^|\/)\.{1,2}(\/|\?|$)/;

/** Control characters (C0, DEL, C1), spaces, a backslash or a fragment: never in our paths. */
function unsafeChar(value: string): boolean {
  for (const ch of value) {
    const c = ch.codePointAt(0)!;
    if (c <= 0x20 || (c >= 0x7f && c <= 0xa0) || c === 0x2028 || c === 0x2029) return true;
    if (ch === '\\' || ch === '#') return true;
  }
  return false;
}

function plainPath(value: string, base: string): boolean {
  if (!value.startsWith('/') || value.includes('//') || unsafeChar(value)) return false;
  const path = value.split('?', 1)[0]!;
  if (DOT_SEGMENT.test(path)) return false;
  return base === '' || path === base || path.startsWith(`${base}/`);
}

/**
 * `raw` when it is a safe return path under `base` (the portal's path prefix, `` or `/portal`),
 * else `fallback`.
 */
export function returnPath(raw: unknown, base: string, fallback: string): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_LENGTH) return fallback;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return fallback;
  }
  if (!plainPath(raw, base) || !plainPath(decoded, base)) return fallback;
  // Last, the browser's own reading: relative to an origin, it must stay on that origin and keep
  // the path as written.
  const origin = 'https://portal.invalid';
  let url: URL;
  try {
    url = new URL(raw, origin);
  } catch {
    return fallback;
  }
  if (url.origin !== origin || `${url.pathname}${url.search}` !== raw) return fallback;
  return raw;
}

/** The query string that carries a return path to the sign-in page (`?return_to=…`), or ``. */
export function returnQuery(path: string | undefined, sep: '?' | '&' = '?'): string {
  return path ? `${sep}return_to=${encodeURIComponent(path)}` : '';
}
