/**
 * What partners may push to `POST /api/partner/webhooks/inbound`: the allowlist of event types
 * (`X-Service-Event`), the body envelope `{ occurred_at, data }`, and the schema of `data` per type.
 * Validation names the first failing field (`data.tx_hash …`), so a partner's engineer can fix the
 * request from the message alone. Every schema rejects fields it does not know: a typo in a field
 * name must fail loudly, not be stored and ignored.
 */
import { type Static, type TSchema, Type } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { parseUtcDateTime } from '../time-format.ts';

export const TX_HASH_PATTERN = '^0x[0-9a-fA-F]{64}$';
export const ADDRESS_PATTERN = '^0x[0-9a-fA-F]{40}$';
export const PLAIN_DECIMAL_PATTERN = '^[0-9]+(\\.[0-9]+)?$';

const submittedFields = {
  product_slug: Type.String({
    minLength: 1,
    maxLength: 200,
    description:
      'Slug of one of your products in the environment of the API key, on the chain of `chain_id`.',
  }),
  chain_id: Type.Integer({
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'Chain id of the transaction (JSON integer).',
  }),
  tx_hash: Type.String({
    pattern: TX_HASH_PATTERN,
    description: 'Hash of the transaction the user broadcast; any case, stored lowercase.',
  }),
  user_address: Type.String({
    pattern: ADDRESS_PATTERN,
    description: 'The user address (0x-prefixed, 40 hex digits).',
  }),
};

export const DepositSubmittedData = Type.Object(
  {
    ...submittedFields,
    amount: Type.String({
      pattern: PLAIN_DECIMAL_PATTERN,
      description: 'Assets deposited, plain decimal string in whole asset units.',
    }),
  },
  { additionalProperties: false, description: '`data` of `deposit.submitted`.' },
);

export const RedeemSubmittedData = Type.Object(
  {
    ...submittedFields,
    shares: Type.String({
      pattern: PLAIN_DECIMAL_PATTERN,
      description: 'Shares redeemed, plain decimal string in whole share units.',
    }),
  },
  { additionalProperties: false, description: '`data` of `redeem.submitted`.' },
);

export const PingData = Type.Object(
  {},
  { additionalProperties: true, description: '`data` of `ping`: any JSON object.' },
);

/** The allowlist, with the schema of `data` per event type. */
export const INBOUND_EVENT_SCHEMAS = {
  ping: PingData,
  'deposit.submitted': DepositSubmittedData,
  'redeem.submitted': RedeemSubmittedData,
} as const satisfies Record<string, TSchema>;

export type InboundEventType = keyof typeof INBOUND_EVENT_SCHEMAS;
export const INBOUND_EVENT_TYPES = Object.keys(INBOUND_EVENT_SCHEMAS) as InboundEventType[];

export type DepositSubmitted = Static<typeof DepositSubmittedData>;
export type RedeemSubmitted = Static<typeof RedeemSubmittedData>;

export function isInboundEventType(value: string | undefined): value is InboundEventType {
  return value !== undefined && Object.hasOwn(INBOUND_EVENT_SCHEMAS, value);
}

/** Event types that report a transaction, which the service then links to its lifecycle event. */
export function isSubmittedEvent(
  type: InboundEventType,
): type is Exclude<InboundEventType, 'ping'> {
  return type !== 'ping';
}

/** The body of every inbound event, for the OpenAPI document (validation is done below). */
export const InboundBody = Type.Object(
  {
    occurred_at: Type.String({
      format: 'date-time',
      description: 'When the event happened: ISO 8601 date-time in UTC with `Z`.',
    }),
    data: Type.Union([DepositSubmittedData, RedeemSubmittedData, PingData], {
      description:
        'The event data; its shape depends on `X-Service-Event`. `ping`: any object. ' +
        '`deposit.submitted`: `{ product_slug, chain_id, tx_hash, user_address, amount }`. ' +
        '`redeem.submitted`: `{ product_slug, chain_id, tx_hash, user_address, shares }`. ' +
        'No other fields are accepted.',
    }),
  },
  { additionalProperties: false },
);

export type InboundEnvelope =
  | { ok: true; occurredAt: Date; data: Record<string, unknown> }
  | { ok: false; message: string };

const TOP_LEVEL_FIELDS = new Set(['occurred_at', 'data']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses the raw body: UTF-8 JSON, an object with exactly `occurred_at` and `data`. */
export function parseInboundEnvelope(raw: Buffer): InboundEnvelope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8.decode(raw));
  } catch {
    return { ok: false, message: 'The body is not valid UTF-8 JSON.' };
  }
  if (!isObject(parsed)) return { ok: false, message: 'The body must be a JSON object.' };
  for (const field of Object.keys(parsed)) {
    if (!TOP_LEVEL_FIELDS.has(field)) {
      return {
        ok: false,
        message: `${field} is not an accepted field; the body is { occurred_at, data }.`,
      };
    }
  }
  if (!('occurred_at' in parsed)) return { ok: false, message: 'occurred_at is required.' };
  const occurredAt =
    typeof parsed.occurred_at === 'string' ? parseUtcDateTime(parsed.occurred_at) : undefined;
  if (!occurredAt) {
    return {
      ok: false,
      message: 'occurred_at must be an ISO 8601 UTC date-time ending in Z (2026-01-31T12:00:00Z).',
    };
  }
  if (!('data' in parsed)) return { ok: false, message: 'data is required.' };
  if (!isObject(parsed.data)) return { ok: false, message: 'data must be a JSON object.' };
  return { ok: true, occurredAt, data: parsed.data };
}

const compiled = Object.fromEntries(
  INBOUND_EVENT_TYPES.map((type) => [type, Compile(INBOUND_EVENT_SCHEMAS[type])]),
) as Record<InboundEventType, Validator>;

const fieldOf = (instancePath: string) =>
  ['data', ...instancePath.split('/').filter(Boolean)].join('.');

/** Undefined when `data` fits the type's schema, else a message naming the first failing field. */
export function dataError(type: InboundEventType, data: unknown): string | undefined {
  const validator = compiled[type];
  if (validator.Check(data)) return undefined;
  for (const error of validator.Errors(data)) {
    switch (error.keyword) {
      case 'boolean': // the `additionalProperties: false` leaf; reported by the next error
        continue;
      case 'required':
        return `${fieldOf(error.instancePath)}.${(error.params as { requiredProperties: string[] }).requiredProperties[0]} is required for ${type}.`;
      case 'additionalProperties':
        return `${fieldOf(error.instancePath)}.${(error.params as { additionalProperties: string[] }).additionalProperties[0]} is not an accepted field of ${type}.`;
      default:
        return `${fieldOf(error.instancePath)} ${error.message}.`;
    }
  }
  return `data does not fit the schema of ${type}.`;
}
