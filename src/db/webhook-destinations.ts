/**
 * Repository of outbound webhook destinations. A secret exists in clear only twice: returned by
 * add() and rotate() to be shown once, and decrypted in the dispatcher to sign. Listing shows its
 * fingerprint. The portal and the operator's CLI both add, edit, rotate and remove through it.
 */
import { BaseError } from '../errors.ts';
import { newId } from '../ids.ts';
import { parseDestinationUrl } from '../webhooks/destination-url.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../webhooks/event-catalogue.ts';
import {
  generateDestinationSecret,
  type SecretBox,
  secretFingerprint,
} from '../webhooks/secret-box.ts';
import type { Queryable } from './client.ts';
import type { Environment } from './products.ts';

export interface WebhookDestination {
  id: string;
  partnerId: string;
  environment: Environment;
  url: string;
  /** null: every event type. */
  eventTypes: string[] | null;
  secretFingerprint: string;
  createdAt: Date;
  secretRotatedAt: Date | null;
  /**
   * The secret before the last rotation while its grace period lasts (it still signs, as a second
   * `webhook-signature` entry); null once expired or after a rotation with no grace.
   */
  previousSecret: { fingerprint: string; expiresAt: Date } | null;
  /**
   * Set while it is disabled (see webhook-health.ts), with a reason the partner reads: by the
   * health job after days of failures ('health'), or by hand in the portal or the CLI ('manual').
   */
  disabledAt: Date | null;
  disabledBy: DisabledBy | null;
  disabledReason: string | null;
  removedAt: Date | null;
}

export type DisabledBy = 'health' | 'manual';

/** An event type list naming a type the catalogue does not have. */
export class DestinationEventTypesError extends BaseError<'unknown_event_type'> {
  override name = 'DestinationEventTypesError';
  readonly unknown: readonly string[];
  constructor(unknown: readonly string[]) {
    super(
      'unknown_event_type',
      `unknown event type ${unknown.join(', ')} (known: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')})`,
    );
    this.unknown = unknown;
  }
}

/** The stored form of an event type list: null (every type) for none; refuses unknown types. */
function eventTypesColumn(types: readonly string[] | null | undefined): string[] | null {
  if (!types || types.length === 0) return null;
  const known: readonly string[] = SUBSCRIBABLE_EVENT_TYPES;
  const unknown = types.filter((t) => !known.includes(t));
  if (unknown.length > 0) throw new DestinationEventTypesError([...new Set(unknown)]);
  return [...new Set(types)];
}

/** How long the previous secret keeps signing after a rotation, unless the rotation says. */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;
/** Longest grace period a rotation may ask for. */
export const MAX_ROTATION_GRACE_MS = 30 * 24 * 60 * 60 * 1000;

/** A webhook_destinations row as read. */
export interface DestinationRow {
  id: string;
  partner_id: string;
  environment: Environment;
  url: string;
  event_types: string[] | null;
  secret_ciphertext: string;
  secret_fingerprint: string;
  created_at: Date;
  secret_rotated_at: Date | null;
  previous_secret_fingerprint: string | null;
  previous_secret_expires_at: Date | null;
  disabled_at: Date | null;
  disabled_by: DisabledBy | null;
  disabled_reason: string | null;
  removed_at: Date | null;
}

export const toDestination = (r: DestinationRow, now = Date.now()): WebhookDestination => ({
  id: r.id,
  partnerId: r.partner_id,
  environment: r.environment,
  url: r.url,
  eventTypes: r.event_types,
  secretFingerprint: r.secret_fingerprint,
  createdAt: r.created_at,
  secretRotatedAt: r.secret_rotated_at,
  previousSecret:
    r.previous_secret_fingerprint !== null &&
    r.previous_secret_expires_at !== null &&
    r.previous_secret_expires_at.getTime() > now
      ? { fingerprint: r.previous_secret_fingerprint, expiresAt: r.previous_secret_expires_at }
      : null,
  disabledAt: r.disabled_at,
  disabledBy: r.disabled_by,
  disabledReason: r.disabled_reason,
  removedAt: r.removed_at,
});

/** The AES-GCM additional data of a destination's secret: its id. */
const secretContext = (id: string) => `webhook_destination:${id}`;

export function createWebhookDestinationsRepo(db: Queryable, box: SecretBox) {
  return {
    /**
     * Adds a destination; throws DestinationUrlError for a URL that is not HTTPS and
     * DestinationEventTypesError for a type the catalogue does not have.
     */
    async add(input: {
      partnerId: string;
      environment: Environment;
      url: string;
      eventTypes?: readonly string[] | null;
    }): Promise<{ destination: WebhookDestination; secret: string }> {
      const url = parseDestinationUrl(input.url).toString();
      const id = newId('whk');
      const secret = generateDestinationSecret();
      const types = eventTypesColumn(input.eventTypes);
      const { rows } = await db.query<DestinationRow>(
        `INSERT INTO webhook_destinations
           (id, partner_id, environment, url, event_types, secret_ciphertext, secret_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
        [
          id,
          input.partnerId,
          input.environment,
          url,
          types,
          box.encrypt(secret, secretContext(id)),
          secretFingerprint(secret),
        ],
      );
      return { destination: toDestination(rows[0] as DestinationRow), secret };
    },

    async list(
      filter: { partnerId?: string; environment?: Environment; includeRemoved?: boolean } = {},
    ): Promise<WebhookDestination[]> {
      const { rows } = await db.query<DestinationRow>(
        `SELECT * FROM webhook_destinations
         WHERE ($1::text IS NULL OR partner_id = $1) AND ($2::text IS NULL OR environment = $2)
           AND ($3 OR removed_at IS NULL)
         ORDER BY created_at, id`,
        [filter.partnerId ?? null, filter.environment ?? null, filter.includeRemoved ?? false],
      );
      return rows.map(toDestination);
    },

    async find(id: string): Promise<WebhookDestination | undefined> {
      const { rows } = await db.query<DestinationRow>(
        'SELECT * FROM webhook_destinations WHERE id = $1',
        [id],
      );
      return rows[0] && toDestination(rows[0]);
    },

    /**
     * Replaces the secret of an active destination; the new one is returned to be shown once.
     * The previous secret keeps signing for `graceMs` (default 24 h; 0: not at all): during it,
     * `webhook-signature` carries a signature with each, so a receiver can switch secrets at any
     * moment of it; `X-Service-Signature` is the new secret's at once. Only one previous secret is
     * kept: rotating again during a grace period ends the older one's at once.
     */
    async rotate(
      id: string,
      options: { graceMs?: number } = {},
    ): Promise<{ destination: WebhookDestination; secret: string } | undefined> {
      const graceMs = options.graceMs ?? DEFAULT_ROTATION_GRACE_MS;
      if (!Number.isSafeInteger(graceMs) || graceMs < 0 || graceMs > MAX_ROTATION_GRACE_MS) {
        throw new RangeError(
          `the grace period must be from 0 to ${MAX_ROTATION_GRACE_MS / 86_400_000} days`,
        );
      }
      const secret = generateDestinationSecret();
      // The right-hand sides read the row as it was: the current secret becomes the previous one.
      const { rows } = await db.query<DestinationRow>(
        `UPDATE webhook_destinations
         SET previous_secret_ciphertext = CASE WHEN $4::bigint > 0 THEN secret_ciphertext END,
             previous_secret_fingerprint = CASE WHEN $4::bigint > 0 THEN secret_fingerprint END,
             previous_secret_expires_at =
               CASE WHEN $4::bigint > 0 THEN now() + $4::float8 * interval '1 millisecond' END,
             secret_ciphertext = $2, secret_fingerprint = $3, secret_rotated_at = now()
         WHERE id = $1 AND removed_at IS NULL RETURNING *`,
        [id, box.encrypt(secret, secretContext(id)), secretFingerprint(secret), graceMs],
      );
      return rows[0] && { destination: toDestination(rows[0]), secret };
    },

    /**
     * Edits an active destination (a removed one: undefined): its URL, checked as add() checks it
     * (HTTPS; the addresses it resolves to are judged at each send by the address policy), and/or
     * its event types (null or []: every type). What changes applies from now on: pending
     * deliveries and their retries go to the new URL (the dispatcher reads it at each attempt);
     * deliveries already made for a type no longer subscribed are still sent; the fan-out uses
     * the new types for events stored after the change. A new URL is a new endpoint, so the
     * health record of the old one (`failing_since`) is cleared, unless the destination is
     * disabled: re-enabling it replays from that moment.
     */
    async update(
      id: string,
      changes: { url?: string; eventTypes?: readonly string[] | null },
    ): Promise<WebhookDestination | undefined> {
      if (changes.url === undefined && changes.eventTypes === undefined) {
        throw new TypeError('nothing to change: give a URL or event types');
      }
      const url = changes.url === undefined ? null : parseDestinationUrl(changes.url).toString();
      const types = changes.eventTypes === undefined ? null : eventTypesColumn(changes.eventTypes);
      const { rows } = await db.query<DestinationRow>(
        `UPDATE webhook_destinations
         SET url = coalesce($2, url),
             event_types = CASE WHEN $3 THEN $4::text[] ELSE event_types END,
             failing_since = CASE WHEN $2 IS NOT NULL AND $2 <> url AND disabled_at IS NULL
                                  THEN NULL ELSE failing_since END
         WHERE id = $1 AND removed_at IS NULL RETURNING *`,
        [id, url, changes.eventTypes !== undefined, types],
      );
      return rows[0] && toDestination(rows[0]);
    },

    /**
     * Removes a destination: no new deliveries are made to it, and its pending ones are failed so
     * the dispatcher stops; the rows stay for the delivery log.
     */
    async remove(id: string): Promise<boolean> {
      const { rows } = await db.query<{ id: string }>(
        `UPDATE webhook_destinations SET removed_at = now()
         WHERE id = $1 AND removed_at IS NULL RETURNING id`,
        [id],
      );
      if (!rows[0]) return false;
      await db.query(
        `UPDATE webhook_deliveries
         SET status = 'failed', failed_at = now(), updated_at = now(),
             last_error = 'destination removed' || coalesce('; last attempt: ' || last_error, '')
         WHERE destination_id = $1 AND status = 'pending'`,
        [id],
      );
      return true;
    },

    /** The clear signing secret of a destination, for the dispatcher. */
    async signingSecret(id: string): Promise<string | undefined> {
      const { rows } = await db.query<{ secret_ciphertext: string }>(
        'SELECT secret_ciphertext FROM webhook_destinations WHERE id = $1',
        [id],
      );
      return rows[0] && box.decrypt(rows[0].secret_ciphertext, secretContext(id));
    },
  };
}

export type WebhookDestinationsRepo = ReturnType<typeof createWebhookDestinationsRepo>;
