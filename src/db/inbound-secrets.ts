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

const secretContext = (partnerId: string, environment: Environment) =>
  `inbound_secret:${partnerId}:${environment}`;

export interface InboundSecretInfo {
  partnerId: string;
  environment: Environment;
  fingerprint: string;
  createdAt: Date;
  rotatedAt: Date | null;
}

export function createInboundSecretsRepo(db: Queryable, box: SecretBox) {
  return {
    /** Creates the secret of a partner environment, or replaces it (a rotation). */
    async set(
      partnerId: string,
      environment: Environment,
    ): Promise<{ secret: string; rotated: boolean }> {
      const secret = generateWebhookSecret();
      const { rows } = await db.query<{ rotated: boolean }>(
        `INSERT INTO inbound_secrets (partner_id, environment, secret_ciphertext, secret_fingerprint)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (partner_id, environment) DO UPDATE
           SET secret_ciphertext = EXCLUDED.secret_ciphertext,
               secret_fingerprint = EXCLUDED.secret_fingerprint,
               rotated_at = now()
         RETURNING rotated_at IS NOT NULL AS rotated`,
        [
          partnerId,
          environment,
          box.encrypt(secret, secretContext(partnerId, environment)),
          secretFingerprint(secret),
        ],
      );
      return { secret, rotated: rows[0]?.rotated ?? false };
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
      }>(
        `SELECT partner_id, environment, secret_fingerprint, created_at, rotated_at
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
      }));
    },
  };
}

export type InboundSecretsRepo = ReturnType<typeof createInboundSecretsRepo>;
