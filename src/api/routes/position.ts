/** GET /api/partner/products/{slug}/position: one wallet's shares, assets and USD value, live. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { getAddress, isAddress } from 'viem';
import type { ProductsRepo } from '../../db/products.ts';
import type { ChainReader } from '../../http/chain-reader.ts';
import { ApiError } from '../../http/errors.ts';
import { DecimalString, Ok, SlugParams } from '../../http/schemas.ts';
import { formatUnits, usdValue } from '../../money/index.ts';
import { productOf } from '../product-access.ts';

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export const Position = Type.Object(
  {
    wallet_address: Type.String({ description: 'EIP-55 checksummed address' }),
    product_slug: Type.String(),
    shares: DecimalString('Engine shares, in whole share units (engine decimals)'),
    assets: DecimalString('Asset value of the shares, in whole asset units'),
    usd_value: DecimalString('USD value, rounded toward zero to cents'),
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
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/api/partner/products/:slug/position',
      {
        schema: {
          operationId: 'getPosition',
          summary: 'Wallet position',
          description:
            "One wallet's shares and their value in one product, read from the chain at one block. Served in every deployed state, so holders of a paused or deprecated product can still exit.",
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
        },
      },
      async (request, reply) => {
        const wallet = parseWalletAddress(request.query.address);
        const product = await productOf(request, deps.products);
        if (!deps.chain.isEvmChain(product.chainId)) {
          throw new ApiError(
            'chain_not_supported',
            'The product chain does not use EVM addresses.',
          );
        }
        const { shares, assets } = await deps.chain.readPosition(
          product,
          wallet,
          reply.elapsedTime,
        );
        return {
          success: true as const,
          data: {
            wallet_address: wallet,
            product_slug: product.slug,
            shares: formatUnits(shares, product.shareDecimals ?? product.assetDecimals),
            assets: formatUnits(assets, product.assetDecimals),
            usd_value: usdValue(assets, product.assetDecimals, product.usdPrice ?? '1'),
          },
        };
      },
    );
  };
}
