/**
 * Errors that say whether trying again can help (as Ponder's internal/errors.ts). A job's runner
 * backs off and tries again on a retryable failure (an RPC timeout, a 5xx, a dropped database
 * connection); a failure that cannot pass by waiting (a bug, bad data, a reverted call) is logged
 * as an error and retried only at the slowest pace, so it neither spins nor stops the other work.
 *
 * Driver and RPC errors are classified in one place, isRetryable(), so no module decides it alone.
 */

import {
  HttpRequestError,
  InternalRpcError,
  LimitExceededRpcError,
  ResourceUnavailableRpcError,
  RpcRequestError,
  TimeoutError,
  BaseError as ViemError,
} from 'viem';
import { isRevertOrNoData } from '../chain/call-errors.ts';
import { BaseError, NETWORK_ERROR_CODES } from '../errors.ts';

/** A job's failure that says whether trying again can help. */
export class ServiceError extends BaseError<'job_failed'> {
  override name = 'ServiceError';
  declare readonly retryable: boolean;
  constructor(message: string, options: { retryable: boolean; cause?: unknown }) {
    super('job_failed', message, options);
  }
}

/** A failure that may pass: an outage, a timeout, a lost race. */
export class RetryableError extends ServiceError {
  override name = 'RetryableError';
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retryable: true });
  }
}

/** A failure that waiting will not fix: invalid input, a reverted call, a broken invariant. */
export class NonRetryableError extends ServiceError {
  override name = 'NonRetryableError';
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retryable: false });
  }
}

/**
 * PostgreSQL SQLSTATEs worth a retry: class 08 (connection exception), 53 (insufficient resources),
 * 57P01–57P03 (server shutting down or starting), 40001/40P01 (serialization failure, deadlock).
 */
function retryableSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '40001' ||
    code === '40P01'
  );
}

/** The messages pg gives a connection it lost, which carry no code. */
const LOST_CONNECTION =
  /Connection terminated|connection (is )?closed|terminating connection|Client has encountered a connection error|timeout exceeded when trying to connect/i;

function classifyViem(err: ViemError): boolean | undefined {
  // A contract that reverts will revert again at the same state: not a transient failure.
  if (isRevertOrNoData(err)) return false;
  const transient = err.walk(
    (e) =>
      e instanceof TimeoutError ||
      e instanceof InternalRpcError ||
      e instanceof LimitExceededRpcError ||
      e instanceof ResourceUnavailableRpcError,
  );
  if (transient) return true;
  const http = err.walk((e) => e instanceof HttpRequestError) as HttpRequestError | null;
  if (http) return http.status === undefined || http.status >= 500 || http.status === 429;
  if (err.walk((e) => e instanceof RpcRequestError)) return true;
  return undefined;
}

/**
 * Whether trying again later can help. The service's own errors say so; drivers' errors are
 * classified here; anything unknown counts as retryable (Ponder's default: only what is known to
 * be permanent is given up on), which costs a few retries at worst.
 */
export function isRetryable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    // The service's own errors say so when their class knows (src/errors.ts).
    if (e instanceof BaseError && e.retryable !== undefined) return e.retryable;
    if (e instanceof ViemError) {
      const verdict = classifyViem(e);
      if (verdict !== undefined) return verdict;
    }
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (NETWORK_ERROR_CODES.has(code)) return true;
      // A five-character SQLSTATE from PostgreSQL or PGlite.
      if (/^[0-9A-Z]{5}$/.test(code)) return retryableSqlState(code);
    }
    if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return true;
}
