/**
 * The spec's retry policy, as a pure function of the failed attempt: no retry on 4xx except 429;
 * 429 waits `Retry-After` plus 0–2 s of jitter (exponential from 2 s when the header is absent);
 * 5xx, timeouts and lost connections back off 1, 2, 4, 8, 16 s; `chain_rpc_unavailable` waits
 * 30 s; at most 5 attempts in all. Every number can be changed per client or per call.
 */
import type { PartnerYieldError } from './errors.ts';

export interface RetryPolicy {
  /** Attempts in all, the first one included (1 turns retries off). Default 5. */
  maxAttempts: number;
  /** First wait after a 5xx or a lost connection; doubles each time. Default 1000 ms. */
  serverErrorBaseMs: number;
  /** First wait after a 429 without `Retry-After`; doubles each time. Default 2000 ms. */
  rateLimitBaseMs: number;
  /** Random extra wait added after a 429, from 0 to this. Default 2000 ms. */
  rateLimitJitterMs: number;
  /** Wait after a 503 `chain_rpc_unavailable`. Default 30000 ms. */
  chainUnavailableMs: number;
  /** Upper bound of any one wait (a huge `Retry-After` included). Default 120000 ms. */
  maxDelayMs: number;
  /** Retry timeouts and lost connections (as a 5xx). Default true. */
  retryConnectionErrors: boolean;
  /**
   * Codes never retried whatever their status. Default `product_paused` (a 503 that lasts until an
   * operator resumes the product: five attempts over 15 s would only delay the answer).
   */
  noRetryCodes: readonly string[];
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  serverErrorBaseMs: 1000,
  rateLimitBaseMs: 2000,
  rateLimitJitterMs: 2000,
  chainUnavailableMs: 30_000,
  maxDelayMs: 120_000,
  retryConnectionErrors: true,
  noRetryCodes: Object.freeze(['product_paused']),
});

export interface RetryInfo {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** How long the client waits before the next attempt. */
  delayMs: number;
  error: PartnerYieldError;
  method: string;
  path: string;
}

/**
 * `Retry-After` in milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when
 * absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface FailedAttempt {
  /** 1 for the first attempt. */
  attempt: number;
  /** HTTP status; undefined when no answer came (timeout, connection). */
  status: number | undefined;
  code: string;
  retryAfter: string | undefined;
}

/** How long to wait before the next attempt, or undefined when the failure is final. */
export function retryDelay(
  policy: RetryPolicy,
  failed: FailedAttempt,
  random: () => number,
  now: number,
): number | undefined {
  if (failed.attempt >= policy.maxAttempts || policy.noRetryCodes.includes(failed.code)) {
    return undefined;
  }
  const exponential = (base: number) => base * 2 ** (failed.attempt - 1);
  let delay: number;
  if (failed.status === undefined) {
    if (!policy.retryConnectionErrors || failed.code === 'aborted') return undefined;
    delay = exponential(policy.serverErrorBaseMs);
  } else if (failed.status === 429) {
    const jitter = random() * policy.rateLimitJitterMs;
    delay =
      (parseRetryAfter(failed.retryAfter, now) ?? exponential(policy.rateLimitBaseMs)) + jitter;
  } else if (failed.code === 'chain_rpc_unavailable') {
    delay = policy.chainUnavailableMs;
  } else if (failed.status >= 500) {
    delay = exponential(policy.serverErrorBaseMs);
  } else {
    return undefined;
  }
  return Math.min(Math.round(delay), policy.maxDelayMs);
}
