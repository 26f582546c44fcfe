/**
 * Repository of inbound webhook secrets: one per partner and environment, with which partners sign
 * what they push to the inbound endpoint. Set (created or rotated) returns the secret to be shown
 * once; the endpoint decrypts it to verify.
 */
import {
  generateWebhookSecret,
  type SecretBox,
  secretFingerprint,
} from '../webhooks/secret-box.ts';
import type { Queryable } from './client.ts';
import type { Environment } from './products.ts';
import { MAX_ROTATION_GRACE_MS } from './webhook-destinations.ts';

const secretContext = (partnerId: string, environment: Environment) =>
  `inbound_secret:${partnerId}:${environment}`;

export interface InboundSecretInfo {
  partnerId: string;
  environment: Environment;
  fingerprint: string;
  createdAt: Date;
  rotatedAt: Date | null;
  /** The secret replaced at the last rotation, while it still verifies. */
  previous: { fingerprint: string; expiresAt: Date } | null;
}

/** What verifies a request: the current secret, and the previous one until its end. */
export interface InboundSecretKeys {
  current: string;
  previous?: { secret: string; expiresAt: Date } | undefined;
}

export function createInboundSecretsRepo(db: Queryable, box: SecretBox) {
  return {
    /**
     * Creates the secret of a partner environment, or replaces it (a rotation). On a rotation the
     * replaced secret keeps verifying for `graceMs` (0: not at all), as an outbound destination's
     * does; rotating again within a grace period ends the older one at once.
     */
    async set(
      partnerId: string,
      environment: Environment,
      options: { graceMs?: number } = {},
    ): Promise<{ secret: string; rotated: boolean; previousExpiresAt: Date | null }> {
      const graceMs = options.graceMs ?? 0;
      if (!Number.isSafeInteger(graceMs) || graceMs < 0 || graceMs > MAX_ROTATION_GRACE_MS) {
        throw new RangeError(
          `the grace period must be from 0 to ${MAX_ROTATION_GRACE_MS / 86_400_000} days`,
        );
      }
      const secret = generateWebhookSecret();
      // The right-hand sides read the row as it was: the current secret becomes the previous one.
      const { rows } = await db.query<{ rotated: boolean; previous_expires_at: Date | null }>(
        `INSERT INTO inbound_secrets (partner_id, environment, secret_ciphertext, secret_fingerprint)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (partner_id, environment) DO UPDATE
           SET previous_secret_ciphertext =
                 CASE WHEN $5::bigint > 0 THEN inbound_secrets.secret_ciphertext END,
               previous_secret_fingerprint =
                 CASE WHEN $5::bigint > 0 THEN inbound_secrets.secret_fingerprint END,
               previous_expires_at =
                 CASE WHEN $5::bigint > 0 THEN now() + $5::float8 * interval '1 millisecond' END,
               secret_ciphertext = EXCLUDED.secret_ciphertext,
               secret_fingerprint = EXCLUDED.secret_fingerprint,
               rotated_at = now()
         RETURNING rotated_at IS NOT NULL AS rotated, previous_expires_at`,
        [
          partnerId,
          environment,
          box.encrypt(secret, secretContext(partnerId, environment)),
          secretFingerprint(secret),
          graceMs,
        ],
      );
      return {
        secret,
        rotated: rows[0]?.rotated ?? false,
        previousExpiresAt: rows[0]?.previous_expires_at ?? null,
      };
    },

    /** The secrets that verify now (the previous one with its end), or undefined when none. */
    async keys(
      partnerId: string,
      environment: Environment,
    ): Promise<InboundSecretKeys | undefined> {
      const { rows } = await db.query<{
        secret_ciphertext: string;
        previous_secret_ciphertext: string | null;
        previous_expires_at: Date | null;
      }>(
        `SELECT secret_ciphertext, previous_secret_ciphertext, previous_expires_at
         FROM inbound_secrets WHERE partner_id = $1 AND environment = $2`,
        [partnerId, environment],
      );
      const row = rows[0];
      if (!row) return undefined;
      const context = secretContext(partnerId, environment);
      const previous =
        row.previous_secret_ciphertext && row.previous_expires_at
          ? {
              secret: box.decrypt(row.previous_secret_ciphertext, context),
              expiresAt: row.previous_expires_at,
            }
          : undefined;
      return { current: box.decrypt(row.secret_ciphertext, context), previous };
    },

    /** The clear secret, or undefined when the partner environment has none. */
    async get(partnerId: string, environment: Environment): Promise<string | undefined> {
      const { rows } = await db.query<{ secret_ciphertext: string }>(
        'SELECT secret_ciphertext FROM inbound_secrets WHERE partner_id = $1 AND environment = $2',
        [partnerId, environment],
      );
      return (
        rows[0] && box.decrypt(rows[0].secret_ciphertext, secretContext(partnerId, environment))
      );
    },

    async list(partnerId?: string): Promise<InboundSecretInfo[]> {
      const { rows } = await db.query<{
        partner_id: string;
        environment: Environment;
        secret_fingerprint: string;
        created_at: Date;
        rotated_at: Date | null;
        previous_secret_fingerprint: string | null;
        previous_expires_at: Date | null;
      }>(
        `SELECT partner_id, environment, secret_fingerprint, created_at, rotated_at,
                previous_secret_fingerprint, previous_expires_at
         FROM inbound_secrets WHERE ($1::text IS NULL OR partner_id = $1)
         ORDER BY partner_id, environment`,
        [partnerId ?? null],
      );
      return rows.map((r) => ({
        partnerId: r.partner_id,
        environment: r.environment,
        fingerprint: r.secret_fingerprint,
        createdAt: r.created_at,
        rotatedAt: r.rotated_at,
        previous:
          r.previous_secret_fingerprint && r.previous_expires_at
            ? { fingerprint: r.previous_secret_fingerprint, expiresAt: r.previous_expires_at }
            : null,
      }));
    },
  };
}

export type InboundSecretsRepo = ReturnType<typeof createInboundSecretsRepo>;
