/**
 * Verifies a delivery of the service's outbound webhooks with the Standard Webhooks scheme:
 * `webhook-signature` holds one or more `v1,<base64 HMAC-SHA256>` over `{webhook-id}.{webhook-
 * timestamp}.{raw body}`, keyed with the base64 part of a `whsec_…` secret. Only the raw bytes as
 * received verify (a parsed and re-serialised object would not, so it is refused outright); the
 * timestamp must be within a tolerance of now (replays are refused); several secrets may be given
 * (during a rotation both the old and the new one verify); signatures are compared in constant time.
 */
import { type Bytes, fromBase64, hmacSha256, timingSafeEqual, utf8 } from './crypto.ts';
import { WebhookVerificationError } from './errors.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEvent, type WebhookEventType } from './events.ts';

/** A Fetch `Headers`, or Node's `IncomingHttpHeaders`, or any plain record of header values. */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

export interface VerifyOptions {
  /** Largest accepted distance between the signed timestamp and now. Default 300 s. */
  toleranceSeconds?: number;
  /** For tests: the clock, in milliseconds. */
  now?: () => number;
}

const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return typeof value === 'string' ? value : value?.[0];
}

function rawBytes(body: unknown): Bytes {
  if (typeof body === 'string') return utf8(body);
  if (body instanceof Uint8Array) return new Uint8Array(body) as Bytes; // Buffer is one too
  if (body instanceof ArrayBuffer) return new Uint8Array(body) as Bytes;
  throw new WebhookVerificationError(
    'webhook_body_not_raw',
    'verifyWebhook needs the raw request body exactly as received (a string, Uint8Array/Buffer or ' +
      'ArrayBuffer), not a parsed object: re-serialising changes the bytes the signature covers. ' +
      'In Express use express.raw({ type: "application/json" }); with fetch, await request.text().',
  );
}

function secretKey(secret: string, position: string): Bytes {
  const key =
    typeof secret === 'string' && secret.startsWith('whsec_')
      ? fromBase64(secret.slice(6))
      : undefined;
  if (!key || key.length === 0) {
    throw new WebhookVerificationError(
      'webhook_invalid_secret',
      `${position}is not a webhook secret: a webhook secret is the whsec_… string shown when the destination was created or rotated.`,
    );
  }
  return key;
}

const isKnown = (type: string): type is WebhookEventType =>
  (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type);

/**
 * Verifies a delivery and returns its event. Throws WebhookVerificationError (switch on `code`)
 * when it must not be trusted. Types this SDK does not know come back with `known: false`.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secrets: string | readonly (string | undefined)[],
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const body = rawBytes(rawBody);
  // In a list, an unset or empty entry is skipped: `[process.env.WHSEC_NEW, process.env.WHSEC_OLD]`
  // with no rotation in progress (WHSEC_OLD unset) verifies with the one secret there is.
  const list = typeof secrets === 'string' ? [secrets] : [...secrets];
  const given = list.flatMap((s, i) => (s === undefined || s === '' ? [] : [{ s, i }]));
  const keys = given.map(({ s, i }) =>
    secretKey(s, typeof secrets === 'string' ? 'The secret ' : `Entry ${i + 1} of the secrets `),
  );
  if (keys.length === 0) {
    throw new WebhookVerificationError(
      'webhook_invalid_secret',
      'No secret given (every entry is empty or undefined: is its environment variable set?).',
    );
  }

  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  const type = header(headers, 'x-service-event');
  if (!id || !timestamp || !signatures || !type) {
    throw new WebhookVerificationError(
      'webhook_missing_headers',
      'A delivery carries webhook-id, webhook-timestamp, webhook-signature and X-Service-Event; ' +
        'pass all the request headers.',
    );
  }
  const seconds = /^\d{1,15}$/.test(timestamp) ? Number(timestamp) : Number.NaN;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = (options.now ?? Date.now)() / 1000;
  if (!(Math.abs(now - seconds) <= tolerance)) {
    throw new WebhookVerificationError(
      'webhook_timestamp_out_of_tolerance',
      `webhook-timestamp is more than ${tolerance} s from now: a replay, or this machine's clock is off.`,
    );
  }

  const prefix = utf8(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length) as Bytes;
  signed.set(prefix);
  signed.set(body, prefix.length);
  const presented = signatures
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => fromBase64(s.slice(3)))
    .filter((s): s is Bytes => s !== undefined);
  let verified = false;
  for (const key of keys) {
    const expected = await hmacSha256(key, signed);
    // Every pair is compared, so the time taken does not tell which one matched.
    for (const sig of presented) verified = timingSafeEqual(expected, sig) || verified;
  }
  if (!verified) {
    throw new WebhookVerificationError(
      'webhook_signature_mismatch',
      'No signature verifies with the given secret(s): check the secret of this destination.',
    );
  }

  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new WebhookVerificationError('webhook_invalid_payload', 'The signed body is not JSON.');
  }
  const base = { id, timestamp: new Date(seconds * 1000) };
  return isKnown(type)
    ? ({ ...base, known: true, type, data } as WebhookEvent)
    : { ...base, known: false, type, data };
}
