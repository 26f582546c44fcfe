/**
 * The SDK's errors. Every failure is a PartnerYieldError whose `code` a caller switches on:
 * the service's catalogue codes for answers of the API (ApiError, with the HTTP status and the
 * request id to quote to support), and a few codes of the SDK's own for what never reached an
 * answer (ConnectionError) or a webhook that does not verify (WebhookVerificationError).
 */
import type { ApiErrorCode } from './types.ts';

/** Codes of failures that are not an API answer. */
export type ConnectionErrorCode = 'timeout' | 'connection_failed' | 'aborted';
/**
 * An answer that is not the service's error envelope (say, an HTML 502 from a proxy) carries
 * `unexpected_response`; a code added to the catalogue after this SDK was built arrives as is.
 */
export type ResponseErrorCode = ApiErrorCode | 'unexpected_response';
export type WebhookErrorCode =
  | 'webhook_body_not_raw'
  | 'webhook_missing_headers'
  | 'webhook_timestamp_out_of_tolerance'
  | 'webhook_signature_mismatch'
  | 'webhook_invalid_secret'
  | 'webhook_invalid_payload';

export type ErrorCode = ResponseErrorCode | ConnectionErrorCode | WebhookErrorCode;

export class PartnerYieldError extends Error {
  override name = 'PartnerYieldError';
  constructor(
    readonly code: ErrorCode | (string & {}),
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The service answered with an error (any status but 2xx). */
export class ApiError extends PartnerYieldError {
  override name = 'ApiError';
  declare readonly code: ResponseErrorCode | (string & {});
  constructor(
    code: ResponseErrorCode | (string & {}),
    message: string,
    readonly status: number,
    /** The `X-Request-Id` of the answer: quote it to support. */
    readonly requestId: string | undefined,
    /** The `Retry-After` header of the answer, when it carried one. */
    readonly retryAfter: string | undefined,
  ) {
    super(code, message);
  }
}

/** No answer: a timeout, a refused or reset connection, or the caller's abort signal. */
export class ConnectionError extends PartnerYieldError {
  override name = 'ConnectionError';
  declare readonly code: ConnectionErrorCode;
  readonly status = undefined;
  constructor(code: ConnectionErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** A webhook delivery that must not be trusted (or a call that cannot verify one). */
export class WebhookVerificationError extends PartnerYieldError {
  override name = 'WebhookVerificationError';
  declare readonly code: WebhookErrorCode;
  constructor(code: WebhookErrorCode, message: string) {
    super(code, message);
  }
}
