/**
 * The outbound event catalogue: every event type the service sends, with its payload schema, its
 * dedupe key, a description and an example. It is the one place an event type is defined: the
 * events repository validates every payload against it before storing (a payload that fails is a
 * bug, thrown in the emitter's transaction and never stored, so never sent), the CLI's `--events`
 * list, the OpenAPI document's `webhooks` section and docs/webhooks-events.md are generated from
 * it. Adding an event type means one entry here plus its emitter.
 *
 * Payloads are exactly the spec's field lists, in its order; schemas reject unknown fields so a
 * typo in an emitter fails its tests instead of reaching a partner.
 */

import type { OpenAPIV3_2 } from '@fastify/swagger';
import { type Static, type TSchema, Type } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { BaseError, type BaseErrorOptions } from '../errors.ts';

const UTC_DATE_TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?Z$';
const DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';
const ADDRESS_PATTERN = '^0x[0-9a-fA-F]{40}$';
const TX_HASH_PATTERN = '^0x[0-9a-f]{64}$';
const AMOUNT_PATTERN = '^[0-9]+(\\.[0-9]+)?$';

const slug = Type.String({ minLength: 1, description: 'Slug of the product.' });
const chainId = Type.Integer({ minimum: 1, description: 'Chain id (JSON integer).' });
const txHash = Type.String({
  pattern: TX_HASH_PATTERN,
  description: 'Transaction hash, lowercase 0x-prefixed.',
});
const logIndex = Type.Integer({ minimum: 0, description: 'Index of the log in its block.' });
const userAddress = Type.String({
  pattern: ADDRESS_PATTERN,
  description: 'Owner of the shares (EIP-55 checksummed).',
});
const shares = Type.String({
  pattern: AMOUNT_PATTERN,
  description: 'Shares, a decimal string in whole units of the engine share.',
});
const occurredAt = Type.String({
  format: 'date-time',
  pattern: UTC_DATE_TIME_PATTERN,
  description: 'Block time of the log, ISO 8601 UTC with `Z`.',
});
const day = Type.String({
  format: 'date',
  pattern: DATE_PATTERN,
  description: 'The UTC day (`YYYY-MM-DD`) the figures are of.',
});
const changePct = Type.Number({
  description: 'Change in percent, 2 decimals, negative for a fall (a JSON number).',
});
const strict = (description: string) => ({ additionalProperties: false, description });

const ConfirmedPayload = (what: string) =>
  Type.Object(
    {
      slug,
      chain_id: chainId,
      tx_hash: txHash,
      block_number: Type.Integer({ minimum: 0, description: 'Block of the log.' }),
      log_index: logIndex,
      user_address: userAddress,
      amount: Type.String({
        pattern: AMOUNT_PATTERN,
        description: 'Assets moved, a decimal string in whole units of the asset.',
      }),
      shares,
      asset_symbol: Type.String({ description: 'Symbol of the asset, as the chain reports it.' }),
      occurred_at: occurredAt,
    },
    strict(what),
  );

const DepositConfirmed = ConfirmedPayload('Payload of `deposit.confirmed`.');
const RedeemConfirmed = ConfirmedPayload('Payload of `redeem.confirmed`.');

const RedeemRequested = Type.Object(
  {
    slug,
    chain_id: chainId,
    tx_hash: txHash,
    log_index: logIndex,
    user_address: userAddress,
    shares,
    request_id: Type.String({
      pattern: '^0x[0-9a-f]+$',
      description: "The engine's request id, compact 0x hex.",
    }),
    estimated_settlement_at: Type.String({
      format: 'date-time',
      pattern: UTC_DATE_TIME_PATTERN,
      description: 'When the request is expected to be claimable, ISO 8601 UTC with `Z`.',
    }),
    occurred_at: occurredAt,
  },
  strict('Payload of `redeem.requested`.'),
);

const RedeemClaimable = Type.Object(
  {
    slug,
    chain_id: chainId,
    request_id: Type.String({
      pattern: '^0x[0-9a-f]+$',
      description: "The engine's request id, compact 0x hex (as in `redeem.requested`).",
    }),
    user_address: Type.String({
      pattern: ADDRESS_PATTERN,
      description: "The request's controller: the wallet that may claim (EIP-55).",
    }),
    shares,
    assets: Type.String({
      pattern: AMOUNT_PATTERN,
      description:
        'Assets the claim pays if made at `block_number` (the engine run on that block), a decimal string in whole units of the asset. A later claim pays the same, give or take the fee rule on yield accrued meanwhile.',
    }),
    asset_symbol: Type.String({ description: 'Symbol of the asset, as the chain reports it.' }),
    claimable_at: Type.String({
      format: 'date-time',
      pattern: UTC_DATE_TIME_PATTERN,
      description:
        "When the request became claimable: the vault's schedule (`claimableAt`) when it publishes one, else the time of the block where the service found it claimable. ISO 8601 UTC with `Z`.",
    }),
    block_number: Type.Integer({
      minimum: 0,
      description: 'The confirmed block at which the request was read claimable.',
    }),
    claim: Type.Object(
      {
        to: Type.String({
          pattern: ADDRESS_PATTERN,
          description: 'The engine: the contract to call (EIP-55).',
        }),
        function: Type.Literal('claimRedeem(uint256,address)', {
          description: 'The function to call, from the controller.',
        }),
        receiver: Type.String({
          pattern: ADDRESS_PATTERN,
          description: 'The receiver encoded in `data`: the controller itself (EIP-55).',
        }),
        data: Type.String({
          pattern: '^0x[0-9a-f]+$',
          description: 'The calldata, ready for the wallet: `claimRedeem(request_id, receiver)`.',
        }),
      },
      strict('The claim call to make: a transaction from `user_address` to `to` with `data`.'),
    ),
  },
  strict('Payload of `redeem.claimable`.'),
);

const ApyChange = Type.Object(
  {
    slug,
    previous_apy: Type.Number({
      description: 'Net APY for the user of the day before, a decimal fraction (JSON number).',
    }),
    current_apy: Type.Number({
      description: 'Net APY for the user of `date`, a decimal fraction (JSON number).',
    }),
    change_pct: changePct,
    date: day,
  },
  strict('Payload of `apy_change`.'),
);

const TvlAlert = Type.Object(
  {
    slug,
    previous_tvl: Type.String({
      pattern: AMOUNT_PATTERN,
      description: 'Engine total assets of the day before, decimal string in whole asset units.',
    }),
    current_tvl: Type.String({
      pattern: AMOUNT_PATTERN,
      description: 'Engine total assets of `date`, decimal string in whole asset units.',
    }),
    change_pct: changePct,
    date: day,
  },
  strict('Payload of `tvl_alert`.'),
);

const VaultPause = Type.Object(
  { slug, status: Type.Literal('paused', { description: 'Always `paused`.' }) },
  strict('Payload of `vault_pause`.'),
);

const ProductDeployed = Type.Object(
  {
    slug,
    chain_id: chainId,
    engine_contract_address: Type.String({
      pattern: ADDRESS_PATTERN,
      description: 'Address of the deployed engine (EIP-55).',
    }),
    underlying_vault_address: Type.String({
      pattern: ADDRESS_PATTERN,
      description: 'Address of the underlying ERC-4626 vault (EIP-55).',
    }),
    status: Type.Literal('active', { description: 'Always `active`.' }),
    occurred_at: Type.String({
      format: 'date-time',
      pattern: UTC_DATE_TIME_PATTERN,
      description: 'Block time of the deployment, ISO 8601 UTC with `Z`.',
    }),
  },
  strict('Payload of `product.deployed`.'),
);

const ChainEventRetracted = Type.Object(
  {
    slug,
    chain_id: chainId,
    retracted_event_id: Type.String({
      pattern: '^evt_[0-9A-Za-z]+$',
      description: 'The id of the event whose log is no longer on the chain (its `webhook-id`).',
    }),
    retracted_event_type: Type.Union(
      [
        Type.Literal('deposit.confirmed'),
        Type.Literal('redeem.requested'),
        Type.Literal('redeem.confirmed'),
      ],
      { description: 'The type of the retracted event.' },
    ),
    tx_hash: txHash,
    block_number: Type.Integer({
      minimum: 0,
      description: 'The block the retracted log was in, before the reorganisation.',
    }),
    block_hash: Type.String({
      pattern: TX_HASH_PATTERN,
      description: 'The hash of that block, which the chain no longer has.',
    }),
    log_index: logIndex,
    reason: Type.Literal('reorg', {
      description:
        'Always `reorg`: the chain reorganised deeper than the confirmation setting of the chain.',
    }),
    detected_at: Type.String({
      format: 'date-time',
      pattern: UTC_DATE_TIME_PATTERN,
      description: 'When the service found the block gone, ISO 8601 UTC with `Z`.',
    }),
    occurred_at: Type.String({
      format: 'date-time',
      pattern: UTC_DATE_TIME_PATTERN,
      description:
        'Added field: the same time as `detected_at` (the retraction happens when the service finds the block gone), under the name every other event uses.',
    }),
  },
  strict('Payload of `chain_event.retracted`.'),
);

const Ping = Type.Object(
  {
    destination_id: Type.String({
      pattern: '^whk_[0-9A-Za-z]+$',
      description: 'The destination the test event was sent to.',
    }),
    sent_at: Type.String({
      format: 'date-time',
      pattern: UTC_DATE_TIME_PATTERN,
      description: 'When the test event was requested, ISO 8601 UTC with `Z`.',
    }),
  },
  strict('Payload of `ping`.'),
);

export interface OutboundEventDefinition<S extends TSchema = TSchema> {
  schema: S;
  /** One sentence: when the event is sent. */
  description: string;
  /** The fields that make the event unique: at most one event per key. */
  dedupeKey: string;
  /** A payload as sent (valid against `schema`; the catalogue test checks it). */
  example: Static<S>;
  /**
   * A test event: sent to one destination on request (the portal's "send a test event", `webhook
   * ping`), whatever its subscription, never fanned out; not offered to `--events`.
   */
  test?: true;
}

const define = <S extends TSchema>(d: OutboundEventDefinition<S>) => d;

const demoTx = '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060';
const demoUser = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** The catalogue. Order is the order lists and documents show. */
export const OUTBOUND_EVENTS = {
  'deposit.confirmed': define({
    schema: DepositConfirmed,
    description:
      "An engine `Deposit` log reached the chain's confirmation depth: shares were minted to the user.",
    dedupeKey: '(event_type, chain_id, tx_hash, log_index)',
    example: {
      slug: 'acme-usdc-core',
      chain_id: 8453,
      tx_hash: demoTx,
      block_number: 18_250_112,
      log_index: 7,
      user_address: demoUser,
      amount: '1250.5',
      shares: '1198.342117',
      asset_symbol: 'USDC',
      occurred_at: '2026-03-01T12:00:07Z',
    },
  }),
  'redeem.requested': define({
    schema: RedeemRequested,
    description:
      'An engine `RedeemRequested` log reached the confirmation depth (asynchronous vaults only): the user asked to redeem; assets follow at settlement.',
    dedupeKey: '(event_type, chain_id, tx_hash, log_index)',
    example: {
      slug: 'acme-usdc-flex',
      chain_id: 8453,
      tx_hash: demoTx,
      log_index: 3,
      user_address: demoUser,
      shares: '500',
      request_id: '0x2a',
      estimated_settlement_at: '2026-03-02T12:00:00Z',
      occurred_at: '2026-03-01T12:00:07Z',
    },
  }),
  'redeem.claimable': define({
    schema: RedeemClaimable,
    description:
      'A redeem request of an asynchronous engine became claimable at a confirmed block: its controller can now claim the assets with the call given. Sent once per request; not sent for a request already claimed when the service first finds it claimable.',
    dedupeKey: '(event_type, chain_id, engine, request_id)',
    example: {
      slug: 'acme-usdc-flex',
      chain_id: 8453,
      request_id: '0x2a',
      user_address: demoUser,
      shares: '500',
      assets: '520.017342',
      asset_symbol: 'USDC',
      claimable_at: '2026-03-02T12:00:00Z',
      block_number: 18_293_310,
      claim: {
        to: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
        function: 'claimRedeem(uint256,address)',
        receiver: demoUser,
        data: '0x588f1343000000000000000000000000000000000000000000000000000000000000002a00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8',
      },
    },
  }),
  'redeem.confirmed': define({
    schema: RedeemConfirmed,
    description:
      "An engine `Withdraw` log reached the confirmation depth: shares were burnt and the assets transferred. On an asynchronous engine this is the claim: the shares already left the user's balance at the request (`redeem.requested`, the same shares), so count them once; this event adds the assets paid.",
    dedupeKey: '(event_type, chain_id, tx_hash, log_index)',
    example: {
      slug: 'acme-usdc-core',
      chain_id: 8453,
      tx_hash: demoTx,
      block_number: 18_250_140,
      log_index: 2,
      user_address: demoUser,
      amount: '520.017342',
      shares: '500',
      asset_symbol: 'USDC',
      occurred_at: '2026-03-01T12:01:03Z',
    },
  }),
  apy_change: define({
    schema: ApyChange,
    description:
      "The product's net APY for the user moved by more than 10 % day over day (either direction). At most one per product per day. Sent for a day closed within two days of it (yesterday, or a day missed while the worker was down); days computed later, as a new product's history, send none: apy-history has them.",
    dedupeKey: '(event_type, slug, date)',
    example: {
      slug: 'acme-usdc-core',
      previous_apy: 0.051234,
      current_apy: 0.061234,
      change_pct: 19.52,
      date: '2026-03-01',
    },
  }),
  tvl_alert: define({
    schema: TvlAlert,
    description:
      "The engine's total assets moved by more than 20 % day over day (either direction). Not sent when the previous day's total was 0. At most one per product per day. Sent for a day closed within two days of it, like `apy_change`; older days send none.",
    dedupeKey: '(event_type, slug, date)',
    example: {
      slug: 'acme-usdc-core',
      previous_tvl: '100000',
      current_tvl: '125000.5',
      change_pct: 25,
      date: '2026-03-01',
    },
  }),
  vault_pause: define({
    schema: VaultPause,
    description:
      'The product entered `paused` (operator, engine paused on chain, or the upstream vault halted); re-sent once per UTC day while it stays paused. Resuming sends nothing.',
    dedupeKey: '(event_type, slug, UTC day); every entry into paused is sent',
    example: { slug: 'acme-usdc-core', status: 'paused' },
  }),
  'product.deployed': define({
    schema: ProductDeployed,
    description: 'The engine of a product was deployed: the product left `pending_deploy`.',
    dedupeKey: '(event_type, slug)',
    example: {
      slug: 'acme-usdc-next',
      chain_id: 8453,
      engine_contract_address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
      underlying_vault_address: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
      status: 'active',
      occurred_at: '2026-03-01T09:30:00.000Z',
    },
  }),
  'chain_event.retracted': define({
    schema: ChainEventRetracted,
    description:
      'A `deposit.confirmed`, `redeem.requested` or `redeem.confirmed` sent earlier is void: the chain reorganised deeper than its confirmation setting and its log is no longer in the canonical chain. Undo what the retracted event did; if the same transaction was mined again, its new event (a new id, with the new block) follows. Sent once per retracted event.',
    dedupeKey: '(event_type, retracted_event_id)',
    example: {
      slug: 'acme-usdc-core',
      chain_id: 8453,
      retracted_event_id: 'evt_2VqN8xK3mB7pL1sT9wR4cY',
      retracted_event_type: 'deposit.confirmed',
      tx_hash: demoTx,
      block_number: 18_250_112,
      block_hash: '0x8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0',
      log_index: 7,
      reason: 'reorg',
      detected_at: '2026-03-01T12:20:41Z',
      occurred_at: '2026-03-01T12:20:41Z',
    },
  }),
  ping: define({
    schema: Ping,
    description:
      'A test event, sent on request to one destination only (whatever event types it subscribes to) to check that it receives and verifies deliveries. Carries no business data; answer `2xx`.',
    dedupeKey: '(event_type, event id): every request sends a new one',
    example: { destination_id: 'whk_7Xq2mZp9LwV4kR8sT3nB1c', sent_at: '2026-03-01T12:00:00.000Z' },
    test: true,
  }),
} as const;

export type OutboundEventType = keyof typeof OUTBOUND_EVENTS;
export type OutboundPayload<T extends OutboundEventType> = Static<
  (typeof OUTBOUND_EVENTS)[T]['schema']
>;
export const OUTBOUND_EVENT_TYPES = Object.keys(OUTBOUND_EVENTS) as OutboundEventType[];
/** The types a destination can subscribe to (`--events`): every type but test events. */
export const SUBSCRIBABLE_EVENT_TYPES = OUTBOUND_EVENT_TYPES.filter(
  (t) => !(OUTBOUND_EVENTS[t] as OutboundEventDefinition).test,
);

export function isOutboundEventType(value: string): value is OutboundEventType {
  return Object.hasOwn(OUTBOUND_EVENTS, value);
}

let validators: Record<OutboundEventType, Validator> | undefined;
const validatorOf = (type: OutboundEventType): Validator => {
  validators ??= Object.fromEntries(
    OUTBOUND_EVENT_TYPES.map((t) => [t, Compile(OUTBOUND_EVENTS[t].schema)]),
  ) as Record<OutboundEventType, Validator>;
  return validators[type];
};

/** A payload that does not fit its event type's schema: a bug in the emitter. */
export class OutboundPayloadError extends BaseError<'outbound_payload_invalid'> {
  override name = 'OutboundPayloadError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('outbound_payload_invalid', message, options);
  }
}

/** Undefined when `payload` fits the schema of `type`, else what is wrong (first error). */
export function outboundPayloadError(type: string, payload: unknown): string | undefined {
  if (!isOutboundEventType(type)) return `${type} is not an event type of the catalogue`;
  const validator = validatorOf(type);
  if (validator.Check(payload)) return undefined;
  for (const error of validator.Errors(payload)) {
    if (error.keyword === 'boolean') continue; // the additionalProperties leaf, reported next
    const params = error.params as {
      requiredProperties?: string[];
      additionalProperties?: string[];
    };
    const field =
      params.requiredProperties?.[0] ?? params.additionalProperties?.[0] ?? error.instancePath;
    return `${type}: ${field || 'payload'} ${error.message}`;
  }
  return `${type}: the payload does not fit its schema`;
}

/** Throws OutboundPayloadError unless `payload` fits the schema of `type`. */
export function assertOutboundPayload(type: string, payload: unknown): void {
  const error = outboundPayloadError(type, payload);
  if (error !== undefined) throw new OutboundPayloadError(error);
}

/**
 * How an emitter builds a payload: typed by the catalogue at compile time and checked against the
 * schema at run time, so a payload that does not fit throws in the emitter (and its tests) before
 * anything is stored or sent.
 */
export function outboundPayload<T extends OutboundEventType>(
  type: T,
  payload: OutboundPayload<T>,
): OutboundPayload<T> {
  assertOutboundPayload(type, payload);
  return payload;
}

/** A schema as plain JSON Schema (TypeBox's own markers dropped), for documents. */
const plain = (schema: TSchema): Record<string, unknown> => JSON.parse(JSON.stringify(schema));

/** Request headers of every delivery, as OpenAPI parameters. */
const DELIVERY_HEADERS: NonNullable<OpenAPIV3_2.PathItemObject['parameters']> = [
  {
    name: 'X-Service-Event',
    in: 'header',
    required: true,
    description: 'The event type (the key of this entry).',
    schema: { type: 'string' },
  },
  {
    name: 'X-Service-Signature',
    in: 'header',
    required: true,
    description:
      'Lowercase hex HMAC-SHA256 of the exact raw body bytes, keyed with the whole destination secret (`whsec_…`) as UTF-8. Compare in constant time. After a rotation, signed with the new secret only (`webhook-signature` carries both during the grace period).',
    schema: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
  {
    name: 'X-Service-Event-Id',
    in: 'header',
    required: true,
    description:
      'The stable id of the event (`evt_…`): the same on every attempt and replay of it. Receivers dedupe by it.',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'Standard Webhooks message id: the event id (equal to `X-Service-Event-Id`).',
    schema: { type: 'string' },
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description:
      'Standard Webhooks: Unix time in seconds of this attempt, covered by `webhook-signature`. Refuse deliveries outside a tolerance (5 min) to stop replays.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      'Standard Webhooks: space-separated `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{raw body}">`, keyed with the base64-decoded part of the secret after `whsec_`. During the grace period of a secret rotation it carries one signature per valid secret (new first); one match suffices. Verifiable with the `standardwebhooks` library.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$' },
  },
  {
    name: 'X-Service-Sequence',
    in: 'header',
    required: false,
    description:
      "The event's number, strictly increasing per product (the same on every attempt and replay; `sequence` in the events feed). Retries deliver out of order: keep the highest number applied per product, and treat an event with a lower one as older than what you hold (apply it in order, or fetch the product's state). Numbers can be skipped, so a gap means nothing. Absent on `ping` and on an event of no product. Not covered by the signatures (it travels over the same TLS connection; the events feed lists it too).",
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
  {
    name: 'X-Service-Partner-Sequence',
    in: 'header',
    required: false,
    description:
      'Strictly increasing over all events of the partner environment (`partner_sequence` in the events feed): the order the feed lists events in. Absent on `ping`.',
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
];

/**
 * The OpenAPI 3.1 `webhooks` object: one entry per catalogue type, keyed by the type, describing the
 * POST the service makes to a destination.
 */
export type OpenApiWebhooks = NonNullable<OpenAPIV3_2.Document['webhooks']>;

/** Who receives an event, said once for every type (docs/webhooks-outbound.md has the detail). */
const DESTINATION_NOTE =
  'Sent to each enabled destination of the partner environment that subscribes to the type (the ' +
  'URL and types can be edited in the portal; changes apply to what is ' +
  'sent from then on). A disabled destination, whether by the service after days of failures (5 by default) ' +
  'or by the partner, receives nothing: its pending deliveries and the events meanwhile are kept ' +
  'as failed, and re-enabling it replays them.';

/** The test event goes only where it is asked for, which the note above would contradict. */
const PING_NOTE =
  'Sent only on request (the portal\'s "Send a test event"), to that one destination, a disabled one too.';

export function openApiWebhooks(): OpenApiWebhooks {
  return Object.fromEntries(
    OUTBOUND_EVENT_TYPES.map((type) => {
      const e: OutboundEventDefinition = OUTBOUND_EVENTS[type];
      const item: OpenAPIV3_2.PathItemObject = {
        post: {
          operationId: `webhook_${type.replace(/\W/g, '_')}`,
          summary: type,
          description: `${e.description}\n\nDedupe key: ${e.dedupeKey}.\n\n${type === 'ping' ? PING_NOTE : DESTINATION_NOTE}`,
          tags: ['Webhooks'],
          parameters: DELIVERY_HEADERS,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: plain(e.schema), example: e.example } },
          },
          responses: {
            '2XX': {
              description:
                'Received. Any other status, or no answer within 10 s, is a failed attempt (retried twice: ~60 s, then ~10 min).',
            },
          },
        },
      };
      return [type, item];
    }),
  );
}
