/**
 * Text PostgreSQL cannot store, refused at the door: a NUL character (refused in text and in jsonb
 * as `\u0000`), a lone UTF-16 surrogate (no UTF-8 encoding exists; jsonb refuses its `\ud800`
 * escape) and, for raw bytes, invalid UTF-8. Without this check such a value reached a query and
 * PostgreSQL's refusal came back as 500 internal_error, which partners are told to retry (#33).
 *
 * `installTextCheck` applies it to every request's path, query, headers and parsed body (any
 * depth, keys included) before validation: 404 not_found for a path parameter (it names nothing
 * that exists), 400 malformed_request for the query and headers, 400 invalid_payload for the body. A route whose body stays raw bytes (the inbound
 * webhook, which verifies a signature over them first) calls `unsafeTextAt` itself.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import type { BaseApp } from './fastify-app.ts';

/** A string holds a NUL or a lone surrogate (String.prototype.isWellFormed is ES2024: Node ≥ 20). */
export function unsafeString(s: string): boolean {
  return s.includes('\0') || !(s as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * The path (`data.product_slug`, `items[2]`) of the first string in `value` that PostgreSQL would
 * refuse, keys included; undefined when there is none. Iterative: a 64 KiB body can nest
 * thousands of levels deep, too deep for recursion.
 */
export function unsafeTextAt(value: unknown, root = 'body'): string | undefined {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (unsafeString(v)) return path;
    } else if (Buffer.isBuffer(v)) {
      if (!isUtf8(v)) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${i}]`]);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        if (unsafeString(k)) return `${path} (a field name)`;
        stack.push([child, `${path}.${k}`]);
      }
    }
  }
  return undefined;
}

/**
 * Whether `value` holds text PostgreSQL would refuse: unsafeTextAt's answer without building a path
 * for every value on the way. A request's params, query and headers are flat objects of strings
 * (headers may be arrays of them), scanned here with no allocation; anything nested goes to
 * unsafeTextAt. Every request pays this scan, so it stays cheap (#33 item 7); the path is built only
 * for the refusal's message.
 */
export function holdsUnsafeText(value: unknown): boolean {
  if (typeof value === 'string') return unsafeString(value);
  if (value === null || typeof value !== 'object') return false;
  if (Buffer.isBuffer(value) || Array.isArray(value)) return unsafeTextAt(value) !== undefined;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    if (unsafeString(key)) return true;
    const child = record[key];
    if (typeof child === 'string') {
      if (unsafeString(child)) return true;
    } else if (child !== null && typeof child === 'object') {
      if (unsafeTextAt(child) !== undefined) return true;
    }
  }
  return false;
}

const REFUSED = 'a NUL character, a lone surrogate or invalid UTF-8';

/**
 * preValidation: after the partner scope's key and rate-limit checks (DECISIONS' order: 401, 429,
 * then 400) and after body parsing, before any schema or handler reads a value.
 */
export function installTextCheck(app: BaseApp): void {
  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('preValidation', function refuseUnsafeText(request, _reply, done) {
    done(refusal(request));
  });
}

/** The refusal of a request holding text PostgreSQL cannot store, or undefined. */
function refusal(request: FastifyRequest): ApiError | undefined {
  if (request.routeOptions.config?.anyText) return undefined;
  // A path parameter no stored row can hold names nothing that exists: 404, like any unknown
  // slug (the routes' own rule for parameters that fail their schema).
  if (holdsUnsafeText(request.params)) return new ApiError('not_found');
  if (holdsUnsafeText(request.query) || holdsUnsafeText(request.headers)) {
    const where = unsafeTextAt(request.query, 'query') ?? unsafeTextAt(request.headers, 'header');
    return new ApiError('malformed_request', `The request's ${where} holds ${REFUSED}.`);
  }
  // Raw bodies (a Buffer) belong to their route, which checks them in its own order.
  if (request.body !== undefined && !Buffer.isBuffer(request.body)) {
    const field = unsafeTextAt(request.body);
    if (field) return new ApiError('invalid_payload', `${field} holds ${REFUSED}.`);
  }
  return undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads nothing from the request into storage (the probes): no text check. */
    anyText?: boolean;
  }
}
