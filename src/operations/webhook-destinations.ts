/**
 * Outbound webhook destinations: add, edit, rotate the secret, disable, re-enable, remove, and send
 * a test event. Each writes its change and the audit row (`${id} ${detail}`) in one transaction;
 * the portal's webhook pages and the `webhook` command call these. Refusals are the repositories'
 * errors (DestinationUrlError, DestinationEventTypesError, WebhookHealthError, WebhookReplayError),
 * which each face words for its reader.
 *
 * Adding a destination, or editing its URL, also takes the sender's address policy: a URL whose
 * host is an IP literal the sender would refuse (private, loopback, link-local…, unless the
 * operator's WEBHOOK_ALLOWED_CIDRS allows it) is refused at once with DestinationAddressError,
 * rather than accepted and failed at every send. Host names are judged at send time only.
 */
import type { Database, Queryable } from '../db/client.ts';
import type { AuditAction } from '../db/portal-audit.ts';
import type { Environment } from '../db/products.ts';
import { createWebhookDeliveriesRepo, type WebhookDelivery } from '../db/webhook-deliveries.ts';
import {
  createWebhookDestinationsRepo,
  type WebhookDestination,
} from '../db/webhook-destinations.ts';
import { createWebhookHealthRepo } from '../db/webhook-health.ts';
import { formatDuration } from '../time-format.ts';
import type { AddressPolicy } from '../webhooks/address-policy.ts';
import { parseDestinationUrl, refusePrivateLiteral } from '../webhooks/destination-url.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import { type Actor, recordChange } from './actor.ts';

/** The audit row of a change to destination `d`: `${id} ${detail}`, in its partner's log. */
export function recordDestinationChange(
  tx: Queryable,
  actor: Actor,
  d: Pick<WebhookDestination, 'id' | 'partnerId' | 'environment'>,
  action: AuditAction,
  detail: string,
): Promise<void> {
  return recordChange(tx, actor, {
    partnerId: d.partnerId,
    action,
    environment: d.environment,
    target: `${d.id} ${detail}`,
  });
}

/** The destination `id` as it is inside the transaction (removed ones too), or undefined. */
const read = (tx: Queryable, box: SecretBox, id: string) =>
  createWebhookDestinationsRepo(tx, box).find(id);

const typesLabel = (t: readonly string[] | null) => (t?.length ? t.join(', ') : 'all');

/** Throws DestinationUrlError for a URL add() would refuse or the sender could never reach. */
function admitUrl(raw: string, addresses: AddressPolicy): string {
  const url = parseDestinationUrl(raw);
  refusePrivateLiteral(url, addresses);
  return url.toString();
}

/** `addresses`: the sender's address policy (webhooks/from-config.ts). */
export async function addDestination(
  db: Database,
  box: SecretBox,
  addresses: AddressPolicy,
  actor: Actor,
  input: {
    partnerId: string;
    environment: Environment;
    url: string;
    eventTypes?: readonly string[] | null;
  },
): Promise<{ destination: WebhookDestination; secret: string }> {
  admitUrl(input.url, addresses);
  return db.transaction(async (tx) => {
    const made = await createWebhookDestinationsRepo(tx, box).add(input);
    await recordDestinationChange(
      tx,
      actor,
      made.destination,
      'webhook.added',
      made.destination.url,
    );
    return made;
  });
}

/**
 * The destination as changed, or undefined when there is no active one with this id. A URL is
 * checked against `addresses` only when it changes: one kept as it is (an edit of the event types
 * alone, in a form that sends the URL back) keeps working, whatever the policy says of it now.
 */
export function updateDestination(
  db: Database,
  box: SecretBox,
  addresses: AddressPolicy,
  actor: Actor,
  id: string,
  changes: { url?: string; eventTypes?: readonly string[] | null },
): Promise<WebhookDestination | undefined> {
  return db.transaction(async (tx) => {
    const before = await read(tx, box, id);
    if (changes.url !== undefined) {
      const url = parseDestinationUrl(changes.url).toString();
      if (url !== before?.url) admitUrl(url, addresses);
    }
    const after = await createWebhookDestinationsRepo(tx, box).update(id, changes);
    if (!before || !after) return undefined;
    const said = [
      ...(before.url !== after.url ? [`url ${before.url} → ${after.url}`] : []),
      ...(typesLabel(before.eventTypes) !== typesLabel(after.eventTypes)
        ? [`events ${typesLabel(before.eventTypes)} → ${typesLabel(after.eventTypes)}`]
        : []),
    ];
    await recordDestinationChange(
      tx,
      actor,
      after,
      'webhook.updated',
      said.length ? said.join('; ') : 'no change',
    );
    return after;
  });
}

export function rotateDestinationSecret(
  db: Database,
  box: SecretBox,
  actor: Actor,
  id: string,
  graceMs: number,
): Promise<{ destination: WebhookDestination; secret: string } | undefined> {
  return db.transaction(async (tx) => {
    const rotated = await createWebhookDestinationsRepo(tx, box).rotate(id, { graceMs });
    if (!rotated) return undefined;
    await recordDestinationChange(
      tx,
      actor,
      rotated.destination,
      'webhook.rotated',
      `grace ${formatDuration(graceMs)}`,
    );
    return rotated;
  });
}

/** The removed destination, or undefined when there is no active one with this id. */
export function removeDestination(
  db: Database,
  box: SecretBox,
  actor: Actor,
  id: string,
): Promise<WebhookDestination | undefined> {
  return db.transaction(async (tx) => {
    const d = await read(tx, box, id);
    if (!d || !(await createWebhookDestinationsRepo(tx, box).remove(id))) return undefined;
    await recordDestinationChange(tx, actor, d, 'webhook.removed', d.url);
    return d;
  });
}

/** Disables by hand; `by` is who, as the partner reads it ("the operator", an e-mail). */
export function disableDestination(
  db: Database,
  box: SecretBox,
  actor: Actor,
  id: string,
  options: { by: string; note?: string | undefined },
) {
  return db.transaction(async (tx) => {
    const done = await createWebhookHealthRepo(tx).disable(id, {
      by: options.by,
      ...(options.note !== undefined ? { note: options.note } : {}),
    });
    const note = options.note?.trim();
    const d = (await read(tx, box, id))!;
    await recordDestinationChange(
      tx,
      actor,
      d,
      'webhook.disabled',
      `${done.failedPending} pending failed${note ? `: ${note}` : ''}`,
    );
    return done;
  });
}

export function enableDestination(
  db: Database,
  box: SecretBox,
  actor: Actor,
  id: string,
  options: { replay?: boolean } = {},
) {
  return db.transaction(async (tx) => {
    const done = await createWebhookHealthRepo(tx).enable(id, options);
    const d = (await read(tx, box, id))!;
    await recordDestinationChange(
      tx,
      actor,
      d,
      'webhook.enabled',
      `${done.replayed.length} replayed`,
    );
    return done;
  });
}

export function pingDestination(
  db: Database,
  box: SecretBox,
  actor: Actor,
  id: string,
): Promise<{ eventId: string; delivery: WebhookDelivery }> {
  return db.transaction(async (tx) => {
    const sent = await createWebhookDeliveriesRepo(tx).enqueuePing(id);
    const d = (await read(tx, box, id))!;
    await recordDestinationChange(tx, actor, d, 'webhook.pinged', `delivery ${sent.delivery.id}`);
    return sent;
  });
}
