/**
 * Who is calling: the identity the partner scope (partner-scope.ts) sets on a request once its key
 * is verified, read by the routes and the product rules (product-access.ts). Its own module so the
 * two read it without importing each other.
 */
import type { FastifyRequest } from 'fastify';
import type { Environment } from '../db/products.ts';

export interface PartnerIdentity {
  keyId: string;
  partnerId: string;
  partnerName: string;
  environment: Environment;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the partner scope once the key is verified. */
    partner?: PartnerIdentity;
  }
}

/** The verified identity of a request in the partner scope. */
export function partnerOf(request: FastifyRequest): PartnerIdentity {
  if (!request.partner) throw new Error('partnerOf() called outside the partner scope');
  return request.partner;
}
