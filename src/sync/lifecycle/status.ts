/**
 * Status moves shared by the worker (chain flags) and the operator CLI (operator flag), so both
 * store the same events the same way: the reasons and the `vault_pause` event commit together.
 */
import type { Database } from '../../db/client.ts';
import { createEventsRepo, dedupeKey } from '../../db/events.ts';
import { createProductsRepo, type Product, type ProductStatus } from '../../db/products.ts';
import { outboundPayload } from '../../webhooks/event-catalogue.ts';
import { utcDate } from '../day-boundary.ts';

export interface PauseReasons {
  operatorPaused?: boolean;
  chainPaused?: boolean;
  upstreamHalted?: boolean;
}

/**
 * Records pause reasons and derives the status. While the product is paused a `vault_pause`
 * event is stored once per UTC day (the day is in the dedupe key); entering `paused` always stores
 * one, even when an earlier pause of the same day already took that day's key (pause, resume, pause
 * again): the re-entry gets a key with its time, so no entry into `paused` is ever silent.
 * Resuming stores nothing (DECISIONS).
 */
export async function applyPauseReasons(
  db: Database,
  product: Pick<Product, 'id' | 'slug' | 'partnerId' | 'environment'>,
  reasons: PauseReasons,
  now: Date,
): Promise<{ before: ProductStatus; after: ProductStatus; eventStored: boolean } | undefined> {
  return db.transaction(async (tx) => {
    const moved = await createProductsRepo(tx).setPauseReasons(product.id, reasons);
    if (!moved) return undefined;
    let eventStored = false;
    if (moved.after === 'paused') {
      const events = createEventsRepo(tx);
      const base = {
        partnerId: product.partnerId,
        environment: product.environment,
        productId: product.id,
        eventType: 'vault_pause',
        payload: outboundPayload('vault_pause', { slug: product.slug, status: 'paused' }),
        occurredAt: now,
      };
      const day = utcDate(Math.floor(now.getTime() / 1000));
      eventStored = !!(await events.insert({
        ...base,
        dedupeKey: dedupeKey.pause(product.slug, day),
      }));
      if (!eventStored && moved.before !== 'paused') {
        eventStored = !!(await events.insert({
          ...base,
          dedupeKey: dedupeKey.pause(product.slug, `${day}@${now.toISOString()}`),
        }));
      }
    }
    return { ...moved, eventStored };
  });
}
