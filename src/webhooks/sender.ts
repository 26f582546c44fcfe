/**
 * The HTTP sender of outbound webhooks: one POST attempt per call, over a pooled keep-alive undici
 * Agent. It never throws; every outcome is a SendResult.
 *
 * SSRF guard: the destination host is resolved when a connection is made, every resolved address
 * must pass the address policy, and the socket connects to exactly the addresses that were checked
 * (the lookup hook hands them to net.connect, so there is no second lookup to rebind). TLS SNI and
 * certificate verification still use the URL's host name. An IP-literal host skips net's lookup, so
 * it is checked here before anything is sent. Pooled sockets belong to one origin and were checked
 * when they were opened.
 *
 * No redirects are followed; a 2xx within the timeout is the only success; at most 1 KiB of the
 * response body is read.
 */

import type { LookupAddress, LookupAllOptions, LookupOptions } from 'node:dns';
import dns from 'node:dns';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import type { AddressPolicy } from './address-policy.ts';
import { DEFAULT_USER_AGENT, deliveryHeaders } from './headers.ts';

export interface SendRequest {
  url: string;
  eventType: string;
  body: string;
  /** `X-Service-Signature`. */
  signature: string;
  /**
   * The stable event id (`X-Service-Event-Id` and `webhook-id`) and the Standard Webhooks
   * `webhook-timestamp` / `webhook-signature`; the headers are sent when given.
   */
  eventId?: string;
  webhookTimestamp?: number;
  webhookSignature?: string;
  /**
   * `X-Service-Sequence`: the event's number, strictly increasing per product; and
   * `X-Service-Partner-Sequence`, strictly increasing per partner environment (migration 0042).
   * Sent when given (a test event has neither; an event of no product has no product number).
   */
  sequence?: bigint | null;
  partnerSequence?: bigint | null;
  /**
   * Awaited once the connection is open and before any byte of the request is written (the
   * dispatcher counts the attempt there, so an attempt counts only when it really goes out). When
   * it rejects nothing is sent, and the result says `notSent`.
   */
  beforeBody?: () => Promise<void>;
}

export interface SendResult {
  /** A 2xx received within the timeout. */
  ok: boolean;
  /** Null when there was no response (network error, timeout, blocked address). */
  statusCode: number | null;
  /** The first 1 KiB of the response body. */
  bodyExcerpt: string | null;
  /** Why there was no response; null on any HTTP response. */
  error: string | null;
  durationMs: number;
  /** `beforeBody` refused: no byte of the request was written. */
  notSent?: true;
}

export interface Sender {
  send(req: SendRequest, signal?: AbortSignal): Promise<SendResult>;
  close(): Promise<void>;
}

export type Resolve = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

export interface SenderOptions {
  policy: AddressPolicy;
  /** PEM; trusted in addition to tls.rootCertificates. */
  extraCa?: string | Buffer;
  /** The whole attempt: connect, headers and body excerpt. */
  timeoutMs?: number;
  userAgent?: string;
  /** Default: dns.promises.lookup(hostname, { all: true, verbatim: true }). */
  resolve?: Resolve;
  /** Maximum sockets per origin. */
  connections?: number;
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export { DEFAULT_USER_AGENT };
export const DEFAULT_CONNECTIONS = 32;
/** Bytes of the response body kept. */
export const EXCERPT_BYTES = 1024;
/** After the excerpt, up to this much more is drained so the socket can be reused; beyond, it is closed. */
const DRAIN_LIMIT_BYTES = 64 * 1024;
/** undici's own connect/headers/body timeouts sit this far behind the attempt's timer. */
const BACKSTOP_MS = 1_000;
const UNDICI_TIMEOUTS = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** A refused destination address; its message is the SendResult error as is. */
export class BlockedAddressError extends BaseError<'destination_address_blocked'> {
  override name = 'BlockedAddressError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('destination_address_blocked', message, options);
  }
}

const defaultResolve: Resolve = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * The `lookup` hook given to net/tls.connect: resolve once, refuse unless every address is allowed,
 * then answer with the checked addresses only. Handles both callback forms (`all: true` is what
 * net's autoSelectFamily asks for).
 */
function guardedLookup(policy: AddressPolicy, resolve: Resolve) {
  return (
    hostname: string,
    options: LookupOptions | LookupAllOptions | number | undefined,
    callback: LookupCallback,
  ): void => {
    const opts: LookupOptions =
      typeof options === 'number' ? { family: options } : (options ?? ({} as LookupOptions));
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`${hostname} resolves to no address`);
          err.code = 'ENOTFOUND';
          callback(err, '');
          return;
        }
        for (const a of addresses) {
          const verdict = policy.check(a.address);
          if (!verdict.allowed) {
            callback(new BlockedAddressError(blockedMessage(verdict, hostname)), '');
            return;
          }
        }
        const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : opts.family;
        const usable =
          family === 4 || family === 6
            ? addresses.filter((a) => isIP(a.address) === family)
            : addresses;
        const first = usable[0];
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`${hostname} has no IPv${family} address`);
          err.code = 'ENOTFOUND';
          callback(err, '');
          return;
        }
        // The family is taken from the address itself, not from what the resolver claimed.
        if (opts.all)
          callback(
            null,
            usable.map((a) => ({ address: a.address, family: isIP(a.address) })),
          );
        else callback(null, first.address, isIP(first.address));
      },
      (err: unknown) => {
        const e: NodeJS.ErrnoException =
          err instanceof Error ? err : new Error(`cannot resolve ${hostname}`);
        callback(e, '');
      },
    );
  };
}

function blockedMessage(
  verdict: { address: string; range: string },
  hostname: string | null,
): string {
  const base = `address ${verdict.address} (${verdict.range}) is not public`;
  return hostname === null ? base : `${base} (resolved from ${hostname})`;
}

/** Human text for a failure without a response. */
function describeError(err: unknown): string {
  if (err instanceof BlockedAddressError) return err.message;
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    const cause = err.cause instanceof Error ? `: ${describeError(err.cause)}` : '';
    const text = err.message || err.name;
    return (code && !text.includes(code) ? `${code}: ${text}` : text) + cause;
  }
  return String(err);
}

export function createSender(options: SenderOptions): Sender {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  const policy = options.policy;
  const extraCa =
    options.extraCa === undefined
      ? undefined
      : [...tls.rootCertificates, options.extraCa.toString()];

  const agent = new Agent({
    connections: options.connections ?? DEFAULT_CONNECTIONS,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 60_000,
    // Backstops only: the attempt's own timer (timeoutMs) fires first.
    headersTimeout: timeoutMs + BACKSTOP_MS,
    bodyTimeout: timeoutMs + BACKSTOP_MS,
    connect: {
      timeout: timeoutMs + BACKSTOP_MS,
      lookup: guardedLookup(policy, options.resolve ?? defaultResolve),
      ...(extraCa ? { ca: extraCa } : {}),
    },
  });

  async function attempt(req: SendRequest, signal: AbortSignal): Promise<SendResult> {
    const started = performance.now();
    const fail = (error: string): SendResult => ({
      ok: false,
      statusCode: null,
      bodyExcerpt: null,
      error,
      durationMs: Math.round(performance.now() - started),
    });

    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return fail('invalid URL');
    }
    if (url.protocol !== 'https:')
      return fail(`only https URLs are delivered to (got ${url.protocol})`);
    if (url.username || url.password) return fail('URLs with credentials are not delivered to');
    // net.connect skips `lookup` for IP literals, so they are judged here.
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (isIP(host) !== 0) {
      const verdict = policy.check(host);
      if (!verdict.allowed) return fail(blockedMessage(verdict, null));
    }

    // With a gate the body is an iterable that waits for it: undici writes the request line and
    // headers together with the first chunk, so nothing reaches the socket before the gate opens.
    let refused: { err: unknown } | undefined;
    const gate = req.beforeBody;
    const body = gate
      ? Readable.from(
          (async function* () {
            try {
              await gate();
            } catch (err) {
              refused = { err };
              throw err;
            }
            yield Buffer.from(req.body);
          })(),
          { objectMode: false },
        )
      : req.body;

    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        signal,
        headers: {
          ...deliveryHeaders(req, userAgent),
          ...(gate ? { 'content-length': String(Buffer.byteLength(req.body)) } : {}),
        },
        body,
      });
      const excerpt = await readExcerpt(res.body, timeoutMs);
      return {
        ok: res.statusCode >= 200 && res.statusCode < 300,
        statusCode: res.statusCode,
        bodyExcerpt: excerpt,
        error: null,
        durationMs: Math.round(performance.now() - started),
      };
    } catch (err) {
      if (refused) return { ...fail(`not sent: ${describeError(refused.err)}`), notSent: true };
      if (signal.aborted) {
        const reason: unknown = signal.reason;
        return fail(reason instanceof TimeoutMarker ? reason.message : 'aborted');
      }
      const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
      if (code && UNDICI_TIMEOUTS.has(code)) return fail(`timed out after ${timeoutMs} ms`);
      return fail(describeError(err));
    }
  }

  return {
    async send(req, external) {
      const controller = new AbortController();
      const timer = setTimeout(
        () => controller.abort(new TimeoutMarker(`timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => controller.abort(new Error('aborted'));
      if (external?.aborted) onAbort();
      else external?.addEventListener('abort', onAbort, { once: true });
      try {
        return await attempt(req, controller.signal);
      } catch (err) {
        // Not expected; send() must never throw.
        return {
          ok: false,
          statusCode: null,
          bodyExcerpt: null,
          error: describeError(err),
          durationMs: 0,
        };
      } finally {
        clearTimeout(timer);
        external?.removeEventListener('abort', onAbort);
      }
    },
    async close() {
      await agent.close();
    },
  };
}

class TimeoutMarker extends BaseError<'timeout'> {
  override name = 'TimeoutError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('timeout', message, options);
  }
}

type ResponseBody = Awaited<ReturnType<typeof request>>['body'];

/**
 * Reads up to EXCERPT_BYTES of the body. The rest is drained in the background (bounded) so the
 * socket can return to the pool, or the stream is destroyed when it is larger than that.
 */
function readExcerpt(body: ResponseBody, drainTimeoutMs: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
    };
    const finish = () =>
      resolve(Buffer.concat(chunks, size).subarray(0, EXCERPT_BYTES).toString('utf8'));
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= EXCERPT_BYTES) {
        cleanup();
        body.pause();
        finish();
        body
          .dump({ limit: DRAIN_LIMIT_BYTES, signal: AbortSignal.timeout(drainTimeoutMs) })
          .catch(() => {});
      }
    };
    const onEnd = () => {
      cleanup();
      finish();
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}
