/**
 * The base of the service's own errors, as viem and Ponder hang theirs from one `BaseError`: a
 * stable snake_case `code` to switch on (the partner API's catalogue codes for ApiError), a message
 * for people, the `cause` it wraps, and whether trying again may succeed (`retryable`, when the class knows). Error
 * classes below extend it and name their code; code that handles errors can rely on these three
 * fields whatever class it meets (the CLI prints a BaseError as one line, without a stack).
 */
export interface BaseErrorOptions {
  cause?: unknown;
  /**
   * Whether the same operation may succeed if tried again (an outage, a lagging node). Left out
   * when the class cannot tell: isRetryable() (src/worker/errors.ts) then judges by the cause.
   */
  retryable?: boolean;
}

export class BaseError<Code extends string = string> extends Error {
  override name = 'BaseError';
  readonly code: Code;
  readonly retryable: boolean | undefined;
  constructor(code: Code, message: string, options: BaseErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable;
  }
}

/**
 * Node's (and undici's) codes for a socket or DNS failure: the peer is down or unreachable for now.
 * Read by isRetryable() (src/worker/errors.ts) and by the HTTP faces' outage answers
 * (src/http/outage.ts).
 */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);
