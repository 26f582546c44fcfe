/**
 * Which product a partner request may see, and in which state, per DECISIONS:
 * unknown slug → 404 not_found; another partner's → 403 not_owned; the partner's own product in the
 * other environment → 404 not_found (a sandbox key must not learn live slugs); then the state rule of
 * the endpoint.
 */
import type { Product, ProductsRepo } from '../db/products.ts';
import { ApiError } from './errors.ts';
import type { PartnerIdentity } from './partner-scope.ts';

/**
 * - `any`: every state (product detail).
 * - `deployed`: the engine must exist (409 engine_not_deployed while pending_deploy); paused and
 *   deprecated products keep serving, so holders can still see positions and health to withdraw.
 * - `new_deposit`: prices a new deposit (yield-calc): also 503 product_paused and 410
 *   product_deprecated.
 */
export type StateRule = 'any' | 'deployed' | 'new_deposit';

export async function resolveProduct(
  products: Pick<ProductsRepo, 'getBySlug'>,
  caller: PartnerIdentity,
  slug: string,
  rule: StateRule,
): Promise<Product> {
  const product = await products.getBySlug(slug);
  if (!product) throw new ApiError('not_found', `No product with slug "${slug}".`);
  if (product.partnerId !== caller.partnerId) throw new ApiError('not_owned');
  if (product.environment !== caller.environment) {
    throw new ApiError('not_found', `No product with slug "${slug}".`);
  }
  if (rule === 'any') return product;
  if (product.status === 'pending_deploy') throw new ApiError('engine_not_deployed');
  if (rule === 'new_deposit') {
    if (product.status === 'paused') throw new ApiError('product_paused');
    if (product.status === 'deprecated') throw new ApiError('product_deprecated');
  }
  return product;
}
