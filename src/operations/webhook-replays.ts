/**
 * Replays: one event sent again (to one destination or to every one that subscribes), or what
 * failed at a destination since a moment. The replay and its audit rows in one transaction; the
 * portal's delivery pages and `webhook replay` call these.
 */
import type { Database } from '../db/client.ts';
import { createWebhookDeliveriesRepo, type WebhookDelivery } from '../db/webhook-deliveries.ts';
import { createWebhookDestinationsRepo } from '../db/webhook-destinations.ts';
import { formatUtc } from '../time-format.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import type { Actor } from './actor.ts';
import { recordDestinationChange } from './webhook-destinations.ts';

/** The new deliveries (none when no destination matches); one audit row per destination. */
export function replayEvent(
  db: Database,
  box: SecretBox,
  actor: Actor,
  eventId: string,
  destinationId?: string,
): Promise<WebhookDelivery[]> {
  return db.transaction(async (tx) => {
    const made = await createWebhookDeliveriesRepo(tx).replayEvent(eventId, destinationId);
    const destinations = createWebhookDestinationsRepo(tx, box);
    for (const delivery of made) {
      const d = (await destinations.find(delivery.destinationId))!;
      await recordDestinationChange(
        tx,
        actor,
        d,
        'webhook.replayed',
        `event ${eventId} as delivery ${delivery.id}`,
      );
    }
    return made;
  });
}

export function replayFailedSince(
  db: Database,
  box: SecretBox,
  actor: Actor,
  destinationId: string,
  since: Date,
): Promise<{ count: number; deliveries: WebhookDelivery[] }> {
  return db.transaction(async (tx) => {
    const done = await createWebhookDeliveriesRepo(tx).replayFailed(destinationId, since);
    const d = (await createWebhookDestinationsRepo(tx, box).find(destinationId))!;
    await recordDestinationChange(
      tx,
      actor,
      d,
      'webhook.replayed',
      `${done.count} failed since ${formatUtc(since)}`,
    );
    return done;
  });
}
