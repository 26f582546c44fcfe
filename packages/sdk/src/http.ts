/**
 * One request to the service with the retry policy: a per-attempt timeout, the caller's abort
 * signal, the error envelope turned into ApiError, and waits chosen by retry.ts. The clock, the
 * sleep and the random source are injectable so tests run the real policy without real waits.
 */
import { ApiError, ConnectionError, PartnerYieldError } from './errors.ts';
import { DEFAULT_RETRY_POLICY, type RetryInfo, type RetryPolicy, retryDelay } from './retry.ts';
import { sdkUserAgent } from './version.ts';

export interface TransportOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  /** Per attempt, in milliseconds. Default 30000. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Called before each wait between attempts. */
  onRetry?: (info: RetryInfo) => void;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** For tests: the clock, the wait and the jitter's random source. */
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  /** Default `partner-yield-sdk/<version> <runtime>/<version>` (version.ts). */
  userAgent?: string;
}

export interface RequestOptions {
  /** Aborts the call, including any wait between attempts. */
  signal?: AbortSignal;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
}

export interface HttpRequest {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | undefined> | undefined;
  headers?: Record<string, string>;
  body?: string;
  /** Liveness needs no key. */
  auth?: boolean;
}

export interface HttpResponse {
  status: number;
  body: unknown;
  requestId: string | undefined;
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export function createTransport(options: TransportOptions) {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  const userAgent = options.userAgent ?? sdkUserAgent();

  function url(req: HttpRequest): string {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) params.set(name, String(value));
    }
    const query = params.toString();
    return `${base}${req.path}${query ? `?${query}` : ''}`;
  }

  async function attempt(
    req: HttpRequest,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<HttpResponse> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': userAgent,
      ...req.headers,
    };
    if (req.auth !== false) {
      if (!options.apiKey) {
        throw new PartnerYieldError(
          'missing_api_key',
          'The client has no apiKey: pass new PartnerYieldClient({ apiKey }) your key (svc_live_… or svc_test_…) (is its environment variable set?).',
        );
      }
      headers['x-api-key'] = options.apiKey;
    }
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new ConnectionError('timeout', `No answer within ${timeoutMs} ms.`)),
      timeoutMs,
    );
    const onAbort = () => timeout.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      let res: Response;
      let text: string;
      try {
        res = await doFetch(url(req), {
          method: req.method,
          headers,
          ...(req.body !== undefined ? { body: req.body } : {}),
          signal: timeout.signal,
          // A redirect is an answer, not a failure to connect: it is reported (below), never
          // followed (the key would go along to wherever it points).
          redirect: 'manual',
        });
        text = await res.text();
      } catch (cause) {
        if (signal?.aborted) {
          throw new ConnectionError('aborted', 'The call was aborted.', { cause: signal.reason });
        }
        if (timeout.signal.aborted) throw timeout.signal.reason;
        throw new ConnectionError('connection_failed', `Could not reach ${base}.`, { cause });
      }
      const requestId = res.headers.get('x-request-id') ?? undefined;
      // Node's fetch hands over the 3xx itself; a browser's an opaque one with status 0.
      if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
        const location = res.headers.get('location');
        throw new ApiError(
          'unexpected_response',
          `The address answered with a redirect (${res.status || '3xx'}${location ? ` to ${location}` : ''}), which the SDK does not follow: set baseUrl to the service's own address (its scheme, host and port, no path).`,
          res.status,
          requestId,
          undefined,
        );
      }
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = undefined;
      }
      if (res.ok && body !== undefined) return { status: res.status, body, requestId };
      const envelope = body as { success?: unknown; code?: unknown; message?: unknown } | undefined;
      const isEnvelope =
        envelope?.success === false &&
        typeof envelope.code === 'string' &&
        typeof envelope.message === 'string';
      throw new ApiError(
        isEnvelope ? (envelope.code as string) : 'unexpected_response',
        isEnvelope
          ? (envelope.message as string)
          : `Unexpected ${res.status} answer that is not the service's JSON.`,
        res.status,
        requestId,
        res.headers.get('retry-after') ?? undefined,
      );
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  return async function request(
    req: HttpRequest,
    call: RequestOptions = {},
  ): Promise<HttpResponse> {
    const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry, ...call.retry };
    const timeoutMs = call.timeoutMs ?? options.timeoutMs ?? 30_000;
    for (let n = 1; ; n++) {
      try {
        return await attempt(req, timeoutMs, call.signal);
      } catch (error) {
        if (!(error instanceof ApiError || error instanceof ConnectionError)) throw error;
        const delayMs = retryDelay(
          policy,
          {
            attempt: n,
            status: error instanceof ApiError ? error.status : undefined,
            code: error.code,
            retryAfter: error instanceof ApiError ? error.retryAfter : undefined,
          },
          random,
          now(),
        );
        if (delayMs === undefined) throw error;
        options.onRetry?.({ attempt: n, delayMs, error, method: req.method, path: req.path });
        try {
          await sleep(delayMs, call.signal);
        } catch (cause) {
          throw new ConnectionError('aborted', 'The call was aborted.', { cause });
        }
      }
    }
  };
}

export type Transport = ReturnType<typeof createTransport>;
