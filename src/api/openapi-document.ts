/**
 * Finishes the OpenAPI document that @fastify/swagger generates from the route schemas, so that a
 * partner can generate a correct client from it (openapi-typescript + openapi-fetch) and it lints
 * clean under Redocly's `recommended` and Spectral's `oas` rules (#14). The route schemas stay the
 * single source of the shapes; this module adds what they do not carry:
 *
 * - per operation: operationId, summary, description, tags (OPERATIONS below; a route missing from
 *   it fails the OpenAPI test), `security: []` on the probes, a global ApiKey requirement;
 * - named component schemas: the resource shapes (Product, LatestMetrics, …) are replaced by
 *   `$ref`s to `#/components/schemas/…`, and every error response by `Error` narrowed to the codes
 *   of that status;
 * - the contract's parameter types where the wire validation is looser on purpose (the routes
 *   accept any string so that a bad value answers the catalogue code, not a generic 400): `days`
 *   an integer enum 7/30/180, `amount` and `address` required, dates `format: date`;
 * - declared response headers: RateLimit-*, Retry-After, Cache-Control, x-request-id;
 * - unions of string literals written as one `enum` (no one-branch `anyOf`).
 */
import { ERROR_CATALOGUE, type ErrorCode } from '../http/errors.ts';
import { FeeStatsRow } from '../http/fee-stats-view.ts';
import { ApyBasisSchema, InboundAck } from '../http/schemas.ts';
import { ApyHistoryRow } from './routes/apy-history.ts';
import { Position } from './routes/position.ts';
import { Health } from './routes/product-health.ts';
import { LatestMetrics, Product } from './routes/products.ts';
import { YieldProjection } from './routes/yield-calc.ts';

type Json = Record<string, unknown>;

interface OperationDoc {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  /** The Cache-Control the 200 answer carries. */
  cacheControl?: string;
}

export const TAGS = [
  { name: 'Products', description: "The caller's products and their daily figures." },
  { name: 'Positions', description: "A wallet's position and a product's operational status." },
  { name: 'Webhooks', description: 'Events the partner pushes to the service (inbound).' },
  { name: 'Probes', description: 'Liveness and readiness, without a key.' },
];

/** Operation metadata, keyed by `METHOD path` as in the document. */
export const OPERATIONS: Record<string, OperationDoc> = {
  'GET /health': {
    operationId: 'getLiveness',
    summary: 'Liveness probe',
    description: 'Answers while the process runs. No key; never rate limited.',
    tags: ['Probes'],
  },
  'GET /ready': {
    operationId: 'getReadiness',
    summary: 'Readiness probe',
    description:
      'Answers 200 once the service can serve partner requests (its database, Redis when configured, ' +
      'and the chain runtime); 503 `service_unavailable` naming the part that is not ready otherwise. No key.',
    tags: ['Probes'],
  },
  'GET /api/partner/products': {
    operationId: 'listProducts',
    summary: 'List products',
    description:
      "Every product of the key's partner in the key's environment (live or sandbox), across chains, " +
      'with its latest daily metrics.',
    tags: ['Products'],
    cacheControl: 'private, max-age=60',
  },
  'GET /api/partner/products/{slug}': {
    operationId: 'getProduct',
    summary: 'Get a product',
    description: 'One product, in every state (pending_deploy, active, paused, deprecated).',
    tags: ['Products'],
    cacheControl: 'private, max-age=60',
  },
  'GET /api/partner/products/{slug}/apy-history': {
    operationId: 'getApyHistory',
    summary: 'APY history',
    description:
      'One row per UTC day of the window (`days`, default 30), newest first, ending at the latest ' +
      'finished day: `days=N` gives N rows when N days of history exist. A day without a snapshot is ' +
      "absent, never invented. Only days of the engine's own (no launch-day estimate).",
    tags: ['Products'],
    cacheControl: 'private, max-age=300',
  },
  'GET /api/partner/products/{slug}/fee-stats': {
    operationId: 'getFeeStats',
    summary: 'Fee-split statistics',
    description:
      'Daily yield, partner fee and service fee, oldest first, for reconciliation. Without dates: the ' +
      '30 days ending at the latest finished day. Only `start_date`: up to today. Only `end_date`: the ' +
      '30 days ending then. A span over 365 days is 400 `range_too_large`.',
    tags: ['Products'],
    cacheControl: 'private, max-age=300',
  },
  'GET /api/partner/products/{slug}/yield-calc': {
    operationId: 'getYieldProjection',
    summary: 'Project yield',
    description:
      "A projection (not a guarantee) of a new deposit's annual and monthly yield at the product's " +
      'latest net APY (`apy_basis` says whether it is measured on the engine or estimated from the ' +
      'underlying vault on launch day). Prices a new deposit: a paused product answers 503 ' +
      '`product_paused`, a deprecated one 410 `product_deprecated`.',
    tags: ['Products'],
    cacheControl: 'no-store',
  },
  'GET /api/partner/products/{slug}/health': {
    operationId: 'getProductHealth',
    summary: 'Product health',
    description:
      'Operational flags read from the chain: gate the deposit action on `is_paused` and ' +
      '`underlying_ok`. 503 `chain_rpc_unavailable` when the chain cannot be read (retry after 30 s).',
    tags: ['Positions'],
    cacheControl: 'private, max-age=60',
  },
  'GET /api/partner/products/{slug}/position': {
    operationId: 'getPosition',
    summary: 'Wallet position',
    description:
      "One wallet's shares and their value in one product, read from the chain at one block. Served " +
      'in every deployed state, so holders of a paused or deprecated product can still exit.',
    tags: ['Positions'],
    cacheControl: 'private, max-age=30',
  },
  'POST /api/partner/webhooks/inbound': {
    operationId: 'postInboundEvent',
    summary: 'Push an inbound event',
    description:
      'The partner pushes a signed event (`ping`, `deposit.submitted`, `redeem.submitted`). Signed with ' +
      'HMAC-SHA256 over the raw body under the inbound secret; idempotent per `Idempotency-Key`.',
    tags: ['Webhooks'],
    cacheControl: 'no-store',
  },
};

/** Shapes published as named components (the route schemas they are made from). */
const NAMED_SCHEMAS: Record<string, unknown> = {
  Product,
  LatestMetrics,
  ApyBasis: ApyBasisSchema,
  ApyHistoryRow,
  FeeStatsRow,
  YieldProjection,
  Health,
  Position,
  InboundAck,
};

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

/** Canonical JSON of a schema as the generator emits it (TypeBox's `const` becomes `enum`). */
function canonical(value: unknown): string {
  return JSON.stringify(normalise(value));
}

function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Json)[key];
    if (key === 'const') out.enum = [normalise(v)];
    else out[key] = normalise(v);
  }
  // One-literal unions are written as one enum (see flattenUnions); compare after the same step.
  return flattenUnion(out);
}

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

/**
 * Canonical keys of the named shapes, in the form the bottom-up walk meets them: with their named
 * descendants already replaced by references (Product holds a LatestMetrics reference, which
 * holds an ApyBasis one). A few passes settle the nesting.
 */
function namedKeys(): Map<string, string> {
  const normalised = Object.entries(NAMED_SCHEMAS).map(
    ([name, s]) => [name, normalise(s)] as const,
  );
  let keys = new Map<string, string>();
  for (let pass = 0; pass < 4; pass++) {
    const next = new Map<string, string>();
    for (const [name, s] of normalised) {
      const form = walkChildren(s as Json, (n) => {
        const inner = keys.get(canonical(n));
        return inner ? ref(inner) : n;
      });
      next.set(canonical(form), name);
    }
    keys = next;
  }
  return keys;
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

/** Applies everything above to the generated document (the swagger plugin's transformObject). */
export function finishOpenApiDocument(doc: Json): Json {
  const named = namedKeys();
  const components = (doc.components ?? {}) as Json;
  const schemas = (components.schemas ?? {}) as Json;
  delete schemas.ErrorEnvelope; // published as `Error`
  schemas.Error = errorComponent();

  // 1. Unions flattened, then named shapes replaced by references (inner ones first: walk is
  //    bottom-up, so Product's latest_metrics becomes a LatestMetrics reference).
  const replaceNamed = (n: Json): Json => {
    const flat = flattenUnion(n);
    const name = named.get(canonical(flat));
    if (name) {
      schemas[name] ??= flat;
      return ref(name);
    }
    return flat;
  };
  const paths = walk(doc.paths, replaceNamed) as Record<string, Record<string, Operation>>;

  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const key = `${method.toUpperCase()} ${path}`;
      const meta = OPERATIONS[key];
      // A route without metadata keeps what it declares (test/api/openapi-lint.test.ts fails on it).
      if (!meta) continue;
      const probe = !path.startsWith('/api/');
      op.operationId = meta.operationId;
      op.summary = meta.summary;
      op.description = op.description
        ? `${meta.description}\n\n${op.description}`
        : meta.description;
      op.tags = meta.tags;
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
        if (status === '429' || (status === '503' && meta.operationId === 'getYieldProjection')) {
          headers['Retry-After'] = headerRef('RetryAfter');
        }
        if (status === '200' && meta.cacheControl)
          headers['Cache-Control'] = headerRef('CacheControl');
        response.headers = { ...(response.headers as Json | undefined), ...headers };
        if (!response.description || response.description === 'Default Response') {
          response.description = status.startsWith('2') ? meta.summary : `Error ${status}`;
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
