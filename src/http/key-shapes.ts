/**
 * Strings shaped like a credential, found in text that is about to be logged (a URL, a header
 * such as a request id). A partner who pastes a key into the wrong place (the path, X-Request-Id)
 * must not find it in our logs (#33): the access log and the request ids go through here.
 *
 * Two shapes:
 * - our own prefixes, `svc_live_`/`svc_test_` (API keys) and `whsec_` (webhook secrets), with
 *   their underscores percent-encoded or not;
 * - any other run of 32 or more base64url characters that mixes upper and lower case (and digits,
 *   under 40 characters) and is not hexadecimal: random material (a key's body without its prefix, a foreign token).
 *   Slugs (lower case), addresses and hashes (hexadecimal, any case), UUIDs and dates never match,
 *   so the access log keeps what it is read for.
 */

/** An API key's body is base64url; a webhook secret's may be standard base64 (`+`, `/`, `=`). */
const PREFIXED =
  /(svc(?:_|%5f)(?:live|test)(?:_|%5f))(?:[A-Za-z0-9_-]|%5f)+|(whsec(?:_|%5f))(?:[A-Za-z0-9_+/=-]|%2b|%2f|%3d|%5f)+/gi;
const RUN = /[A-Za-z0-9_-]{32,}/g;

const randomLooking = (run: string) =>
  /[A-Z]/.test(run) &&
  /[a-z]/.test(run) &&
  // From 40 characters, mixed case is enough (one key body in ~7,000 has no digit); shorter
  // runs need a digit too.
  (run.length >= 40 || /[0-9]/.test(run)) &&
  // An address or a hash (0x and hexadecimal, checksummed in mixed case) is no secret.
  !/^(0x)?[0-9a-fA-F]+$/.test(run);

/** `text` with every key-shaped part replaced by `[redacted]` (a prefix of ours is kept). */
export function redactKeyShaped(text: string): string {
  return text
    .replace(PREFIXED, (_match, key?: string, secret?: string) => `${key ?? secret}[redacted]`)
    .replace(RUN, (run) => (randomLooking(run) ? '[redacted]' : run));
}

/** Whether `text` holds anything key-shaped. */
export function hasKeyShape(text: string): boolean {
  return redactKeyShaped(text) !== text;
}
