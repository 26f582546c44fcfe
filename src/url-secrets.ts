/**
 * The secret parts of provider URLs, kept out of every log line. RPC providers put the key in the
 * URL (`…/v3/<key>`, `…/v2/<key>`, `https://name.provider.pro/<token>/`, `?apikey=…`,
 * `https://user:pass@host`), and a URL travels inside errors: viem writes it into an error's
 * `url`, `message`, `details` and `metaMessages`. Rather than trusting every call site to strip it,
 * the URLs' secret parts are registered once (when the chains are configured) and the logger
 * replaces them in each finished line (src/logger.ts), whatever field they reached.
 *
 * Secret parts: the password (and a key-like user name), every query value, and every path segment that looks like a key
 * (12 characters or more, or 8 or more with a digit). Short words such as `v3`, `eth` or `rpc`
 * stay, so a line still says which provider and network it was about.
 */
const REDACTED = '[redacted]';
const secrets = new Set<string>();
let pattern: RegExp | undefined;

function looksLikeKey(segment: string): boolean {
  return segment.length >= 12 || (segment.length >= 8 && /\d/.test(segment));
}

function add(s: string): void {
  if (s.length < 6 || secrets.has(s)) return;
  secrets.add(s);
  pattern = undefined;
}

/** Registers the secret parts of `url` (a provider URL); returns them. */
export function registerUrlSecrets(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const found: string[] = [];
  const keep = (s: string) => {
    if (!s) return;
    found.push(s);
    try {
      const decoded = decodeURIComponent(s);
      if (decoded !== s) found.push(decoded);
    } catch {
      // not percent-encoded text: the raw form is enough
    }
  };
  if (looksLikeKey(parsed.username)) keep(parsed.username);
  keep(parsed.password);
  for (const segment of parsed.pathname.split('/')) if (looksLikeKey(segment)) keep(segment);
  for (const [, value] of parsed.searchParams) keep(value);
  // The raw query too: a value may be written differently (`+` for a space) than it parses.
  for (const part of parsed.search.slice(1).split('&')) keep(part.split('=').slice(1).join('='));
  for (const s of found) add(s);
  return found.filter((s) => s.length >= 6);
}

/** Registers the password of a service URL (database, Redis, SMTP): its other parts are not keys. */
export function registerUrlPassword(url: string): void {
  try {
    const { password } = new URL(url);
    if (password) {
      add(password);
      add(decodeURIComponent(password));
    }
  } catch {
    // not a URL: nothing to register
  }
}

/** `url` with its secret parts replaced: for showing a configured URL (CLI, status pages). */
export function redactUrl(url: string): string {
  return scrubSecrets(url, registerUrlSecrets(url));
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** `text` with every registered secret (or those given) replaced by `[redacted]`. */
export function scrubSecrets(text: string, only?: readonly string[]): string {
  if (only) {
    let out = text;
    // Longest first, so a secret that contains another is replaced whole.
    for (const s of [...only].sort((a, b) => b.length - a.length))
      out = out.split(s).join(REDACTED);
    return out;
  }
  if (secrets.size === 0) return text;
  pattern ??= new RegExp(
    [...secrets]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join('|'),
    'g',
  );
  return text.replace(pattern, REDACTED);
}
