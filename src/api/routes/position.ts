/** GET /api/partner/products/{slug}/position: one wallet's shares, assets and USD value, live. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { getAddress, isAddress } from 'viem';
import type { ProductsRepo } from '../../db/products.ts';
import type { RedeemRequestsRepo } from '../../db/redeem-requests.ts';
import type { ChainReader, PositionReading } from '../../http/chain-reader.ts';
import { ApiError } from '../../http/errors.ts';
import { holdAnswer } from '../../http/held-answers.ts';
import type { ReadCache } from '../../http/read-cache.ts';
import { DecimalString, Ok, SlugParams } from '../../http/schemas.ts';
import { formatUnits, usdValue } from '../../money/index.ts';
import { productOf } from '../product-access.ts';
import { renderedAnswers, sendJsonText } from '../rendered-answers.ts';

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

const UTC_SECONDS = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$';

export const RedeemRequestInFlight = Type.Object(
  {
    request_id: Type.String({
      pattern: '^0x[0-9a-f]+$',
      description: "The engine's request id, compact 0x hex (as in the `redeem.*` events).",
    }),
    shares: DecimalString('Engine shares escrowed by the request, in whole share units'),
    status: Type.Union([Type.Literal('pending'), Type.Literal('claimable')], {
      description:
        '`pending`: waiting for the underlying vault; `claimable`: the wallet can claim now (`claimRedeem(request_id, receiver)` on the engine). A claimed request is no longer listed.',
    }),
    estimated_claimable_at: Type.Union(
      [Type.String({ format: 'date-time', pattern: UTC_SECONDS }), Type.Null()],
      {
        description:
          "Pending: when the vault's schedule says the request becomes claimable (ISO 8601 UTC); null when the vault publishes none, and when claimable.",
      },
    ),
    claimable_since: Type.Union(
      [Type.String({ format: 'date-time', pattern: UTC_SECONDS }), Type.Null()],
      {
        description:
          "Claimable: since when (the vault's schedule when it has one, else when the service found it claimable); null while pending, or when the service has not seen it claimable yet.",
      },
    ),
  },
  { title: 'RedeemRequestInFlight', additionalProperties: false },
);

/** DECISIONS' shape of a request in flight ("Additions and new events": `pending_redeems`). */
export const PendingRedeem = Type.Object(
  {
    request_id: Type.String({
      pattern: '^0x[0-9a-f]+$',
      description: "The engine's request id, compact 0x hex (as in the `redeem.*` events).",
    }),
    shares: DecimalString('Engine shares escrowed by the request, in whole share units'),
    status: Type.Union([Type.Literal('pending'), Type.Literal('claimable')]),
    claimable_at: Type.Union(
      [Type.String({ format: 'date-time', pattern: UTC_SECONDS }), Type.Null()],
      {
        description:
          "Pending: when it is expected to become claimable (the vault's schedule; null when it publishes none). Claimable: since when (null when not known). The same as `redeem_requests`' `estimated_claimable_at` or `claimable_since`.",
      },
    ),
  },
  { title: 'PendingRedeem', additionalProperties: false },
);

export const Position = Type.Object(
  {
    wallet_address: Type.String({ description: 'EIP-55 checksummed address' }),
    product_slug: Type.String(),
    shares: DecimalString('Engine shares, in whole share units (engine decimals)'),
    assets: DecimalString('Asset value of the shares, in whole asset units'),
    usd_value: DecimalString('USD value, rounded toward zero to cents'),
    pending_redeems: Type.Array(PendingRedeem, {
      description:
        "The wallet's redeem requests in flight, in the shape DECISIONS gives them (one `claimable_at`): the same requests, in the same order, as `redeem_requests`, which tells an estimate from a fact. Always empty on a synchronous product.",
    }),
    redeem_requests: Type.Array(RedeemRequestInFlight, {
      description:
        "Added field. The wallet's redeem requests in flight (it is their controller), oldest first: asynchronous products only (always empty on a synchronous one). A request is listed once its `redeem.requested` is confirmed; its status is read from the chain at the same block as the shares, so a claimed request is gone at once. Escrowed shares are not in `shares`.",
    }),
  },
  { title: 'Position', additionalProperties: false },
);

/**
 * The address rules of DECISIONS, before any lookup (request shape comes before the slug):
 * not `^0x[0-9a-fA-F]{40}$` → invalid_address; mixed case failing its EIP-55 checksum →
 * chain_not_supported. All-lower and all-upper hex carry no checksum and are accepted.
 */
export function parseWalletAddress(raw: string | undefined): `0x${string}` {
  if (raw === undefined || !HEX_ADDRESS.test(raw)) throw new ApiError('invalid_address');
  const hex = raw.slice(2);
  const mixedCase = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  if (mixedCase && !isAddress(raw, { strict: true })) {
    throw new ApiError('chain_not_supported', 'The address fails its EIP-55 checksum.');
  }
  return getAddress(raw.toLowerCase());
}

export function positionRoute(deps: {
  products: ProductsRepo;
  chain: ChainReader;
  /** The followed redeem requests (src/sync/exits.ts); without it, no request is listed. */
  requests?: RedeemRequestsRepo;
  /** Its generation tells whether the product read is still the read model's (held answers). */
  cache: ReadCache;
}): FastifyPluginAsyncTypebox {
  const rendered = renderedAnswers<PositionReading>();
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/position',
      {
        schema: {
          operationId: 'getPosition',
          summary: 'Wallet position',
          description:
            "One wallet's shares and their value in one product, read from the chain at one block, and its redeem requests in flight (asynchronous products: pending or claimable, with their times). Served in every deployed state, so holders of a paused or deprecated product can still exit.",
          tags: ['Positions'],
          params: SlugParams,
          querystring: Type.Object({ address: Type.Optional(Type.String()) }),
          response: { 200: Ok(Position) },
        },
        config: {
          cacheControl: 'private, max-age=30',
          validationErrorCode: () => 'invalid_address',
          serves: 'deployed',
          errorCodes: ['invalid_address', 'chain_not_supported', 'chain_rpc_unavailable'],
          heldAnswers: true,
        },
      },
      async (request, reply) => {
        const generation = deps.cache.generation();
        const wallet = parseWalletAddress(request.query.address);
        const product = await productOf(request, deps.products);
        if (!deps.chain.isEvmChain(product.chainId)) {
          throw new ApiError(
            'chain_not_supported',
            'The product chain does not use EVM addresses.',
          );
        }
        const followed =
          product.vaultKind === 'async' && deps.requests
            ? await deps.requests.openFor(product.id, wallet)
            : [];
        const reading = await deps.chain.readPosition(
          product,
          wallet,
          reply.elapsedTime,
          followed.map((r) => r.requestId),
        );
        // With no request in flight the answer is a function of the product and the reading alone:
        // rendered once for them (rendered-answers.ts).
        // A synchronous product's answer is a function of the product and the reading: held
        // while both are the current ones. An asynchronous product's requests are read from the
        // database on every request (their rows change without a new read-model version).
        const followsRequests = product.vaultKind === 'async' && deps.requests !== undefined;
        if (!followsRequests) {
          holdAnswer(
            request,
            () =>
              deps.cache.generation() === generation &&
              deps.chain.cachedPosition(product, wallet) === reading,
          );
        }
        const ready = followed.length === 0 ? rendered.get(product, reading) : undefined;
        if (ready !== undefined) {
          return sendJsonText(reply, ready);
        }
        const { shares, assets, requests } = reading;
        const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
        const shareDecimals = product.shareDecimals ?? product.assetDecimals;
        const inFlight = followed.flatMap((row, i) => {
          const live = requests[i];
          if (!live || live.claimed) return [];
          const schedule = live.claimableAt > 0n ? new Date(Number(live.claimableAt) * 1000) : null;
          return [
            {
              request_id: `0x${row.requestId.toString(16)}`,
              shares: formatUnits(row.shares, shareDecimals),
              status: live.claimable ? ('claimable' as const) : ('pending' as const),
              estimated_claimable_at: !live.claimable && schedule ? iso(schedule) : null,
              claimable_since: live.claimable
                ? row.claimableAt
                  ? iso(row.claimableAt)
                  : schedule
                    ? iso(schedule)
                    : null
                : null,
            },
          ];
        });
        const answer = {
          success: true as const,
          data: {
            wallet_address: wallet,
            product_slug: product.slug,
            shares: formatUnits(shares, product.shareDecimals ?? product.assetDecimals),
            assets: formatUnits(assets, product.assetDecimals),
            usd_value: usdValue(assets, product.assetDecimals, product.usdPrice ?? '1'),
            pending_redeems: inFlight.map((r) => ({
              request_id: r.request_id,
              shares: r.shares,
              status: r.status,
              claimable_at: r.estimated_claimable_at ?? r.claimable_since,
            })),
            redeem_requests: inFlight,
          },
        };
        if (followed.length > 0) return answer;
        // The route's own serialiser: the very bytes it would send for this answer.
        const body = reply.serialize(answer) as string;
        rendered.set(product, reading, body);
        return sendJsonText(reply, body);
      },
    );
  };
}
