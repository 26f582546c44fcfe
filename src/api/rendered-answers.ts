/**
 * Answers that are a function of a product and a chain reading alone (position with no request in
 * flight, health), rendered once for them rather than once per request (#33 item 7). Both keys are
 * the caches' own objects, kept unchanged while cached: the product until the read model changes
 * (src/http/read-cache.ts), the reading for its seconds (src/http/chain-reader.ts). Held weakly,
 * so an entry goes when either leaves its cache.
 */
import type { FastifyReply } from 'fastify';
import type { Product } from '../db/products.ts';

export interface RenderedAnswers<R extends object> {
  /** The JSON text rendered for this product and reading, if any. */
  get(product: Product, reading: R): string | undefined;
  set(product: Product, reading: R, json: string): void;
}

export function renderedAnswers<R extends object>(): RenderedAnswers<R> {
  const byProduct = new WeakMap<Product, WeakMap<R, string>>();
  return {
    get: (product, reading) => byProduct.get(product)?.get(reading),
    set(product, reading, json) {
      let forProduct = byProduct.get(product);
      if (forProduct === undefined) {
        forProduct = new WeakMap();
        byProduct.set(product, forProduct);
      }
      forProduct.set(reading, json);
    },
  };
}

/** Sends JSON text as it is (a typed reply only takes its schema's object). */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json);
}
