/**
 * The spec's retry policy, as a pure function of the failed attempt: no retry on 4xx except 429;
 * `Retry-After` is honoured on every status that carries it (429, 503), plus 0–2 s of jitter; a
 * `Retry-After` longer than the longest wait (`maxDelayMs`, 2 minutes) means "not yet" (yield-calc
 * before the day closes) and is not retried: the error carries it. Without the header, 429 backs
 * off exponentially from 2 s, and 5xx, timeouts and lost connections 1, 2, 4, 8, 16 s, each ±20 %
 * (jitter, so that clients failed together do not retry together); `chain_rpc_unavailable` waits
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
  /** Random extra wait added to a `Retry-After` (or a 429's back-off), from 0 to this. Default 2000 ms. */
  rateLimitJitterMs: number;
  /** A 5xx back-off is multiplied by 1 ± this, at random. Default 0.2. */
  serverErrorJitter: number;
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
  serverErrorJitter: 0.2,
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
  const serverBackoff = () =>
    exponential(policy.serverErrorBaseMs) * (1 + policy.serverErrorJitter * (2 * random() - 1));
  if (failed.status === undefined) {
    if (!policy.retryConnectionErrors || failed.code === 'aborted') return undefined;
    return Math.min(Math.round(serverBackoff()), policy.maxDelayMs);
  }
  if (failed.status !== 429 && failed.status < 500) return undefined;
  const retryAfter = parseRetryAfter(failed.retryAfter, now);
  // Longer than the client would ever wait: the answer means "not yet", and the caller decides.
  if (retryAfter !== undefined && retryAfter > policy.maxDelayMs) return undefined;
  let delay: number;
  if (retryAfter !== undefined) delay = retryAfter + random() * policy.rateLimitJitterMs;
  else if (failed.status === 429) {
    delay = exponential(policy.rateLimitBaseMs) + random() * policy.rateLimitJitterMs;
  } else if (failed.code === 'chain_rpc_unavailable') delay = policy.chainUnavailableMs;
  else delay = serverBackoff();
  return Math.min(Math.round(delay), policy.maxDelayMs);
}
