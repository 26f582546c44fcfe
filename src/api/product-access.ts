/**
 * Product routes, declared once. A route under `/api/partner/products/:slug` says which product
 * states it serves (`config.serves`); from that one declaration follow both what it answers and
 * what it documents:
 *
 * - unknown slug → 404 not_found; another partner's → 403 not_owned; the partner's own product in
 *   the other environment → 404 not_found (a sandbox key must not learn live slugs) — DECISIONS;
 * - a product in a state the route does not serve → that state's code (STATE_REFUSALS);
 * - the route's documented error codes are `productErrorCodes(serves)` plus its own.
 *
 * A slug that cannot exist (empty, over-long, a control character) is not_found without a
 * database round trip: PostgreSQL rejects a NUL byte (22021), and no such slug is stored anyway.
 */
import type { FastifyRequest } from 'fastify';
import type { Product, ProductStatus, ProductsRepo } from '../db/products.ts';
import { ApiError, type ErrorCode } from '../http/errors.ts';
import { type PartnerIdentity, partnerOf } from './partner-identity.ts';

/**
 * - `any`: every state (product detail).
 * - `deployed`: the engine must exist (409 engine_not_deployed while pending_deploy); paused and
 *   deprecated products keep serving, so holders can still see positions and health to withdraw.
 * - `new_deposit`: prices a new deposit (yield-calc): also 503 product_paused and 410
 *   product_deprecated.
 */
export type StateRule = 'any' | 'deployed' | 'new_deposit';

export const STATES_SERVED: Record<StateRule, readonly ProductStatus[]> = {
  any: ['pending_deploy', 'active', 'paused', 'deprecated'],
  deployed: ['active', 'paused', 'deprecated'],
  new_deposit: ['active'],
};

/** What a route answers for a product in a state it does not serve (every rule serves `active`). */
const STATE_REFUSALS: Record<Exclude<ProductStatus, 'active'>, ErrorCode> = {
  pending_deploy: 'engine_not_deployed',
  paused: 'product_paused',
  deprecated: 'product_deprecated',
};

/** The longest slug a path may carry before it is refused unread (stored slugs are far shorter). */
export const MAX_SLUG_LENGTH = 200;

/** Printable, no separators or controls: anything else cannot be a stored slug. */
const POSSIBLE_SLUG = /^[\x21-\x7e]+$/;

/** The codes a product route serving `rule` can answer about its product, in order. */
export function productErrorCodes(rule: StateRule): ErrorCode[] {
  const refused = (Object.keys(STATE_REFUSALS) as (keyof typeof STATE_REFUSALS)[])
    .filter((s) => !STATES_SERVED[rule].includes(s))
    .map((s) => STATE_REFUSALS[s]);
  return ['not_found', 'not_owned', ...refused];
}

const notFound = (slug: string) =>
  new ApiError(
    'not_found',
    POSSIBLE_SLUG.test(slug) && slug.length <= 100
      ? `No product with slug "${slug}".`
      : 'No such product.',
  );

/** The caller's own product in the caller's environment, whatever its state. */
export async function findOwnedProduct(
  products: Pick<ProductsRepo, 'getBySlug'>,
  caller: PartnerIdentity,
  slug: string,
): Promise<Product> {
  if (slug.length === 0 || slug.length > MAX_SLUG_LENGTH || !POSSIBLE_SLUG.test(slug)) {
    throw notFound(slug);
  }
  const product = await products.getBySlug(slug);
  if (!product) throw notFound(slug);
  if (product.partnerId !== caller.partnerId) throw new ApiError('not_owned');
  if (product.environment !== caller.environment) throw notFound(slug);
  return product;
}

/** Throws the state's code unless `rule` serves the product's state. */
export function assertServed(product: Product, rule: StateRule): void {
  const { status } = product;
  if (status !== 'active' && !STATES_SERVED[rule].includes(status)) {
    throw new ApiError(STATE_REFUSALS[status]);
  }
}

export async function resolveProduct(
  products: Pick<ProductsRepo, 'getBySlug'>,
  caller: PartnerIdentity,
  slug: string,
  rule: StateRule,
): Promise<Product> {
  const product = await findOwnedProduct(products, caller, slug);
  assertServed(product, rule);
  return product;
}

/** The rule a product route declared; a product route without one is a programming error. */
export function declaredRule(request: FastifyRequest): StateRule {
  const rule = request.routeOptions.config.serves;
  if (!rule) throw new Error(`${request.routeOptions.url} declares no config.serves`);
  return rule;
}

/**
 * The product of a product route's request, checked against the states the route declared.
 * `beforeState` runs between ownership and the state rule: the request-shape checks that need the
 * product (an amount's decimals) come before its state (DECISIONS' order of checks).
 */
export async function productOf(
  request: FastifyRequest,
  products: Pick<ProductsRepo, 'getBySlug'>,
  beforeState?: (product: Product) => void,
): Promise<Product> {
  const { slug } = request.params as { slug?: unknown };
  if (typeof slug !== 'string') throw new Error(`${request.routeOptions.url} has no :slug`);
  const product = await findOwnedProduct(products, partnerOf(request), slug);
  beforeState?.(product);
  assertServed(product, declaredRule(request));
  return product;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Product routes: the product states this route serves (see product-access.ts). */
    serves?: StateRule;
  }
}
