/**
 * Schemas shared by the partner routes: the success and error envelopes and common parameters.
 * They validate requests, serialise responses, and generate the OpenAPI document (openapi.ts), so
 * the contract is written once.
 */
import { type TSchema, Type } from 'typebox';
import { ERROR_CATALOGUE, type ErrorCode } from './errors.ts';

export const Ok = <T extends TSchema>(data: T) =>
  Type.Object({ success: Type.Literal(true), data }, { additionalProperties: false });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    code: Type.Union(
      (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).map((code) => Type.Literal(code)),
      { description: 'Stable machine-readable code; switch on it.' },
    ),
    message: Type.String({ description: 'Human-readable; wording may change; do not parse.' }),
  },
  { additionalProperties: false },
);

/**
 * Error responses of a route, grouped by HTTP status, each listing the codes it can carry: the
 * OpenAPI document then tells a client exactly which codes to switch on per endpoint.
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CATALOGUE[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      Type.Object(
        {
          success: Type.Literal(false),
          code: Type.Union(list.map((c) => Type.Literal(c))),
          message: Type.String(),
        },
        {
          additionalProperties: false,
          description: list.map((c) => `\`${c}\`: ${ERROR_CATALOGUE[c].message}`).join(' '),
        },
      ),
    ]),
  );
}

export const SlugParams = Type.Object({
  slug: Type.String({ description: 'Product slug', minLength: 1, maxLength: 200 }),
});

export const DecimalString = (description: string) =>
  Type.String({ pattern: '^-?[0-9]+(\\.[0-9]+)?$', description });

/** A realised APY (issue #35): a 6-place decimal fraction, or null until its window has data. */
export const RealisedApy = (description: string) =>
  Type.Union([DecimalString(description), Type.Null()], { description });

/** The acknowledgement of an inbound event; the spec gives it unwrapped (no `data`). */
export const InboundAck = Type.Object(
  {
    success: Type.Literal(true),
    event_id: Type.Integer({
      description: 'Id of the stored event (the original one if duplicate)',
    }),
    duplicate: Type.Boolean({
      description: 'True when this Idempotency-Key was seen before: a no-op answering the original',
    }),
  },
  {
    title: 'InboundAck',
    additionalProperties: false,
    description:
      'Stored (`duplicate: false`), or stored before under this Idempotency-Key (`duplicate: true`).',
  },
);

export const ApyBasisSchema = Type.Union(
  [Type.Literal('engine'), Type.Literal('underlying_estimate')],
  {
    title: 'ApyBasis',
    description:
      "Where the APYs come from. `engine`: measured on the engine's own day (its share price at two " +
      'day boundaries). `underlying_estimate`: the product has no full day of its own yet (launched ' +
      "today or yesterday, or the engine holds no shares), so the figures are the underlying vault's " +
      "measured APY of its latest day, and that APY with the engine's fees applied to the gain.",
  },
);
