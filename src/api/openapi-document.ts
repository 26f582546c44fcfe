/**
 * Finishes the OpenAPI document that @fastify/swagger generates from the route declarations, so
 * that a partner can generate a correct client from it (openapi-typescript + openapi-fetch) and it
 * lints clean under Redocly's `recommended` and Spectral's `oas` rules (#14). Each route file
 * carries its own contract (operationId, summary, description, tags, schemas, the error codes it
 * may answer, its Cache-Control); this module only applies the rules common to every operation:
 *
 * - named component schemas: a shape with a `title` (Product, LatestMetrics, …) is published once
 *   under `#/components/schemas/<title>` and referenced; every error response becomes `Error`
 *   narrowed to the codes of that status;
 * - `security: []` on the probes, a global ApiKey requirement;
 * - the contract's parameter types where the wire validation is looser on purpose (the routes
 *   accept any string so that a bad value answers the catalogue code, not a generic 400): `days`
 *   an integer enum 7/30/180, `amount` and `address` required, dates `format: date`;
 * - declared response headers: RateLimit-*, Retry-After, Cache-Control (from the route's
 *   `config.cacheControl`), x-request-id;
 * - unions of string literals written as one `enum` (no one-branch `anyOf`).
 */
import { ERROR_CATALOGUE, type ErrorCode } from '../http/errors.ts';

type Json = Record<string, unknown>;

export const TAGS = [
  { name: 'Products', description: "The caller's products and their daily figures." },
  { name: 'Positions', description: "A wallet's position and a product's operational status." },
  {
    name: 'Events',
    description: 'The events sent to your webhook destinations, listed: catch up and reconcile.',
  },
  { name: 'Webhooks', description: 'Events the partner pushes to the service (inbound).' },
  { name: 'Probes', description: 'Liveness and readiness, without a key.' },
];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

const HEADERS: Record<string, Json> = {
  RequestId: {
    description:
      'Id of the request in our logs: yours when you sent a plain `X-Request-Id` (≤ 128 of ' +
      '`A-Za-z0-9._:-`), else generated. Quote it to support.',
    schema: { type: 'string' },
  },
  RateLimitLimit: {
    description: "The key's budget per 60-second window: 1000 (live) or 100 (sandbox).",
    schema: { type: 'integer' },
  },
  RateLimitRemaining: {
    description: 'Requests left in the current window.',
    schema: { type: 'integer' },
  },
  RateLimitReset: {
    description: 'Seconds until the current window ends.',
    schema: { type: 'integer' },
  },
  RetryAfter: {
    description: 'Seconds to wait before retrying (add 0–2 s of random jitter).',
    schema: { type: 'integer' },
  },
  CacheControl: {
    description:
      'How long the answer may be reused (guidance of the API; `no-store` for yield-calc).',
    schema: { type: 'string' },
  },
};

/** `anyOf` of string (or boolean) literals → one `enum`; a one-branch `anyOf` → that branch. */
function flattenUnion(node: Json): Json {
  const anyOf = node.anyOf;
  if (!Array.isArray(anyOf)) return node;
  if (anyOf.length === 1) {
    const { anyOf: _drop, ...rest } = node;
    return { ...(anyOf[0] as Json), ...rest };
  }
  const literals = anyOf.every(
    (b) =>
      b &&
      typeof b === 'object' &&
      Array.isArray((b as Json).enum) &&
      ((b as Json).enum as unknown[]).length === 1 &&
      (b as Json).type === 'string' &&
      Object.keys(b as Json).every((k) => k === 'type' || k === 'enum'),
  );
  if (!literals) return node;
  const { anyOf: _drop, ...rest } = node;
  return { type: 'string', enum: anyOf.map((b) => ((b as Json).enum as unknown[])[0]), ...rest };
}

/** Bottom-up: every object node's children are visited before the node itself. */
function walk(node: unknown, visit: (n: Json) => Json): unknown {
  if (Array.isArray(node)) return node.map((n) => walk(n, visit));
  if (node === null || typeof node !== 'object') return node;
  return visit(walkChildren(node as Json, visit));
}

function walkChildren(node: Json, visit: (n: Json) => Json): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = walk(v, visit);
  return out;
}

/** The error envelope: every error answer of every operation is this, narrowed per status. */
function errorComponent(): Json {
  return {
    type: 'object',
    description:
      'The error envelope of every error answer. Switch on `code`; `message` is for people and may change.',
    required: ['success', 'code', 'message'],
    properties: {
      success: { type: 'boolean', enum: [false] },
      code: {
        type: 'string',
        enum: Object.keys(ERROR_CATALOGUE),
        description:
          'Stable machine-readable code (see the table in the description; `idempotency_replay` is ' +
          'the catalogue name of an inbound duplicate, answered 200 with `duplicate: true`).',
      },
      message: { type: 'string', description: 'Human-readable; wording may change; do not parse.' },
    },
    additionalProperties: false,
  };
}

function isErrorSchema(schema: unknown): schema is Json {
  const s = schema as Json | undefined;
  const props = s?.properties as Json | undefined;
  const success = props?.success as Json | undefined;
  return Array.isArray(success?.enum) && (success.enum as unknown[])[0] === false && !!props?.code;
}

/** The codes an error schema allows (after flattening: one enum). */
function codesOf(schema: Json): ErrorCode[] {
  const code = (schema.properties as Json).code as Json;
  return ((code.enum as ErrorCode[] | undefined) ?? []).slice();
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Array<Json & { name: string; in: string; schema?: Json }>;
  responses: Record<string, Json & { content?: { 'application/json'?: { schema: unknown } } }>;
}

/**
 * Applies everything above to the generated document (the swagger plugin's transformObject).
 * `cacheControl` holds each operation's declared Cache-Control, keyed `METHOD /path/{param}`.
 */
export function finishOpenApiDocument(
  doc: Json,
  cacheControl: ReadonlyMap<string, string> = new Map(),
): Json {
  const components = (doc.components ?? {}) as Json;
  const schemas = (components.schemas ?? {}) as Json;
  delete schemas.ErrorEnvelope; // published as `Error`
  schemas.Error = errorComponent();

  // 1. Unions flattened, then titled shapes replaced by references (inner ones first: walk is
  //    bottom-up, so Product's latest_metrics becomes a LatestMetrics reference).
  const replaceNamed = (n: Json): Json => {
    const flat = flattenUnion(n);
    const { title, ...shape } = flat;
    if (typeof title !== 'string') return flat;
    schemas[title] ??= shape;
    return ref(title);
  };
  const paths = walk(doc.paths, replaceNamed) as Record<string, Record<string, Operation>>;

  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      // A route that declares no operationId is left as it is (test/api/openapi-lint.test.ts fails
      // on one in the service; tests add such routes of their own).
      if (!op.operationId) continue;
      const probe = !path.startsWith('/api/');
      const declaredCacheControl = cacheControl.get(`${method.toUpperCase()} ${path}`);
      if (probe) op.security = [];

      for (const p of op.parameters ?? []) {
        if (p.in === 'query' && (p.name === 'amount' || p.name === 'address')) p.required = true;
        if (p.in === 'query' && p.name === 'days') {
          p.schema = { type: 'integer', enum: [7, 30, 180], default: 30 };
        }
        if (p.in === 'query' && (p.name === 'start_date' || p.name === 'end_date')) {
          p.schema = { ...(p.schema ?? {}), type: 'string', format: 'date' };
        }
      }

      // Every request can meet the HTTP layer's 400 (a malformed header or URL), probes too.
      if (!Object.keys(op.responses).some((s) => s.startsWith('4'))) {
        op.responses['400'] = {
          description: '`malformed_request`: the request is not well-formed HTTP.',
          content: { 'application/json': { schema: { ...errorNarrowed(['malformed_request']) } } },
        };
      }

      for (const [status, response] of Object.entries(op.responses)) {
        const content = response.content?.['application/json'];
        if (content && isErrorSchema(content.schema)) {
          content.schema = errorNarrowed(codesOf(content.schema));
        }
        const headers: Json = { 'x-request-id': headerRef('RequestId') };
        // The budget headers come with every answer past the key check (not with a 401).
        if (!probe && status !== '401') {
          headers['RateLimit-Limit'] = headerRef('RateLimitLimit');
          headers['RateLimit-Remaining'] = headerRef('RateLimitRemaining');
          headers['RateLimit-Reset'] = headerRef('RateLimitReset');
        }
        // Sent with 429, and with yield-calc's 503 `service_unavailable` (no APY yet).
        if (status === '429' || (status === '503' && op.operationId === 'getYieldProjection')) {
          headers['Retry-After'] = headerRef('RetryAfter');
        }
        if (status === '200' && declaredCacheControl)
          headers['Cache-Control'] = headerRef('CacheControl');
        response.headers = { ...(response.headers as Json | undefined), ...headers };
        if (!response.description || response.description === 'Default Response') {
          response.description = status.startsWith('2') ? (op.summary ?? '') : `Error ${status}`;
        }
      }
    }
  }

  return {
    ...doc,
    info: {
      ...(doc.info as Json),
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      contact: { name: 'Partner integrations' },
    },
    servers: [
      {
        url: 'http://127.0.0.1:3000',
        description:
          'A local service (npm start; PORT sets the port). Use your deployment’s base URL.',
      },
    ],
    security: [{ ApiKey: [] }],
    tags: TAGS,
    paths,
    components: {
      ...components,
      schemas,
      headers: HEADERS,
    },
  };
}

/** `Error` narrowed to the codes one status of one operation can carry. */
function errorNarrowed(codes: readonly ErrorCode[]): Json {
  return {
    allOf: [
      ref('Error'),
      {
        type: 'object',
        properties: { code: { type: 'string', enum: [...codes] } },
      },
    ],
    description: codes.map((c) => `\`${c}\`: ${ERROR_CATALOGUE[c].message}`).join(' '),
  };
}
