/**
 * Repository of outbound webhook destinations. A secret exists in clear only twice: returned by
 * add() and rotate() to be shown once, and decrypted in the dispatcher to sign. Listing shows its
 * fingerprint.
 */
import { newId } from '../ids.ts';
import { parseDestinationUrl } from '../webhooks/destination-url.ts';
import {
  generateWebhookSecret,
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
  removedAt: Date | null;
}

interface Row {
  id: string;
  partner_id: string;
  environment: Environment;
  url: string;
  event_types: string[] | null;
  secret_ciphertext: string;
  secret_fingerprint: string;
  created_at: Date;
  secret_rotated_at: Date | null;
  removed_at: Date | null;
}

const toDestination = (r: Row): WebhookDestination => ({
  id: r.id,
  partnerId: r.partner_id,
  environment: r.environment,
  url: r.url,
  eventTypes: r.event_types,
  secretFingerprint: r.secret_fingerprint,
  createdAt: r.created_at,
  secretRotatedAt: r.secret_rotated_at,
  removedAt: r.removed_at,
});

/** The AES-GCM additional data of a destination's secret: its id. */
const secretContext = (id: string) => `webhook_destination:${id}`;

export function createWebhookDestinationsRepo(db: Queryable, box: SecretBox) {
  return {
    /** Adds a destination; throws DestinationUrlError for a URL that is not HTTPS. */
    async add(input: {
      partnerId: string;
      environment: Environment;
      url: string;
      eventTypes?: readonly string[] | null;
    }): Promise<{ destination: WebhookDestination; secret: string }> {
      const url = parseDestinationUrl(input.url).toString();
      const id = newId('whk');
      const secret = generateWebhookSecret();
      const types = input.eventTypes && input.eventTypes.length > 0 ? [...input.eventTypes] : null;
      const { rows } = await db.query<Row>(
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
      return { destination: toDestination(rows[0] as Row), secret };
    },

    async list(
      filter: { partnerId?: string; environment?: Environment; includeRemoved?: boolean } = {},
    ): Promise<WebhookDestination[]> {
      const { rows } = await db.query<Row>(
        `SELECT * FROM webhook_destinations
         WHERE ($1::text IS NULL OR partner_id = $1) AND ($2::text IS NULL OR environment = $2)
           AND ($3 OR removed_at IS NULL)
         ORDER BY created_at, id`,
        [filter.partnerId ?? null, filter.environment ?? null, filter.includeRemoved ?? false],
      );
      return rows.map(toDestination);
    },

    async find(id: string): Promise<WebhookDestination | undefined> {
      const { rows } = await db.query<Row>('SELECT * FROM webhook_destinations WHERE id = $1', [
        id,
      ]);
      return rows[0] && toDestination(rows[0]);
    },

    /** Replaces the secret of an active destination; the new one is returned to be shown once. */
    async rotate(
      id: string,
    ): Promise<{ destination: WebhookDestination; secret: string } | undefined> {
      const secret = generateWebhookSecret();
      const { rows } = await db.query<Row>(
        `UPDATE webhook_destinations
         SET secret_ciphertext = $2, secret_fingerprint = $3, secret_rotated_at = now()
         WHERE id = $1 AND removed_at IS NULL RETURNING *`,
        [id, box.encrypt(secret, secretContext(id)), secretFingerprint(secret)],
      );
      return rows[0] && { destination: toDestination(rows[0]), secret };
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
             last_error = coalesce(last_error, 'destination removed')
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
