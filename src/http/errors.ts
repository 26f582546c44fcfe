/**
 * The one error catalogue: every code the API can answer, with its HTTP status and a default
 * message. Handlers throw ApiError(code); the error handler renders the envelope
 * `{ success: false, code, message }`. Codes are the contract; messages may change.
 */
import { BaseError } from '../errors.ts';

export const ERROR_CATALOGUE = {
  missing_api_key: { status: 401, message: 'The X-Api-Key header is required.' },
  invalid_api_key: { status: 401, message: 'The API key is not recognised.' },
  revoked_api_key: {
    status: 401,
    message:
      'The API key has been revoked; use a current key from the portal’s API keys page (or ask your operator).',
  },
  rate_limited: { status: 429, message: 'Rate limit exceeded; retry after the Retry-After delay.' },
  not_found: { status: 404, message: 'Not found.' },
  not_owned: { status: 403, message: 'This product belongs to another partner.' },
  engine_not_deployed: { status: 409, message: 'The product engine is not deployed yet.' },
  product_paused: { status: 503, message: 'The product is paused.' },
  product_deprecated: { status: 410, message: 'The product is deprecated: withdrawals only.' },
  invalid_address: {
    status: 400,
    message: 'address must be a 0x-prefixed, 42-character hexadecimal string.',
  },
  chain_not_supported: {
    status: 400,
    message: 'The address checksum does not match, or the product chain does not support it.',
  },
  invalid_amount: {
    status: 400,
    message: 'amount must be a plain decimal greater than 0 and at most 2^256.',
  },
  range_too_large: { status: 400, message: 'The date span must not exceed 365 days.' },
  invalid_days: { status: 400, message: 'days must be one of 7, 30, 180.' },
  invalid_date: { status: 400, message: 'Dates must be real YYYY-MM-DD days, start before end.' },
  invalid_cursor: {
    status: 400,
    message: 'cursor is not a cursor this service gave, or does not go with order.',
  },
  invalid_apy_window: { status: 400, message: 'apy_window must be one of 1d, 7d, 30d.' },
  invalid_order: { status: 400, message: 'order must be newest_first or oldest_first.' },
  invalid_limit: { status: 400, message: 'limit must be an integer from 1 to 100.' },
  invalid_time: {
    status: 400,
    message:
      'Times must be ISO 8601 date-times in UTC (…Z), occurred_since before occurred_before.',
  },
  signature_mismatch: {
    status: 401,
    message:
      'The signature does not verify: sign the exact raw body bytes with HMAC-SHA256 under this environment’s inbound secret (hex).',
  },
  missing_idempotency_key: { status: 400, message: 'The Idempotency-Key header is required.' },
  unknown_event: { status: 400, message: 'The event type is not accepted.' },
  invalid_payload: { status: 400, message: 'The request body is not valid.' },
  idempotency_conflict: {
    status: 409,
    message: 'This Idempotency-Key was used with another body, or its first request is in flight.',
  },
  idempotency_replay: { status: 200, message: 'This Idempotency-Key was seen before.' },
  payload_too_large: { status: 413, message: 'The request body exceeds 64 KiB.' },
  unsupported_media_type: { status: 415, message: 'Content-Type must be application/json.' },
  malformed_request: {
    status: 400,
    message: 'The request is not well-formed HTTP (request line, a header, or body framing).',
  },
  request_timeout: { status: 408, message: 'The request was not received in time.' },
  headers_too_large: { status: 431, message: 'The request headers are too large (16 KiB in all).' },
  internal_error: { status: 500, message: 'Internal error; safe to retry with backoff.' },
  chain_rpc_unavailable: {
    status: 503,
    message: 'The chain RPC is unavailable; retry after 30 seconds.',
  },
  service_unavailable: { status: 503, message: 'The service is not ready.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export class ApiError extends BaseError<ErrorCode> {
  override name = 'ApiError';
  readonly status: number;
  /** The same status under the name Fastify and the portal's error page read. */
  readonly statusCode: number;
  constructor(
    code: ErrorCode,
    message?: string,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(code, message ?? ERROR_CATALOGUE[code].message);
    this.status = ERROR_CATALOGUE[code].status;
    this.statusCode = this.status;
  }
}

export interface ErrorEnvelope {
  success: false;
  code: ErrorCode;
  message: string;
}

export function envelope(code: ErrorCode, message?: string): ErrorEnvelope {
  return { success: false, code, message: message ?? ERROR_CATALOGUE[code].message };
}
