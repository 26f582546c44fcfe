/**
 * Whether a process's master key is the one the database's secrets are encrypted under: the newest
 * stored secret of each kind is decrypted. Without this, a process started with another key (one
 * machine without MASTER_KEY makes a key file of its own) serves as if healthy and fails every
 * webhook delivery and inbound check with "the master key differs", and an operator command
 * stores secrets no other process can read.
 */
import { ConfigError } from '../config.ts';
import { MasterKeyError, masterKeyFile, type SecretBox } from '../webhooks/secret-box.ts';
import type { Queryable } from './client.ts';

/** What could not be decrypted (a description for the operator), or undefined when all could. */
export async function masterKeyMismatch(
  db: Queryable,
  box: SecretBox,
): Promise<string | undefined> {
  const { rows: destinations } = await db.query<{ id: string; secret_ciphertext: string }>(
    `SELECT id, secret_ciphertext FROM webhook_destinations ORDER BY created_at DESC LIMIT 1`,
  );
  const { rows: inbound } = await db.query<{
    partner_id: string;
    environment: string;
    secret_ciphertext: string;
  }>(
    `SELECT partner_id, environment, secret_ciphertext FROM inbound_secrets
     ORDER BY created_at DESC LIMIT 1`,
  );
  // The contexts are those the repositories encrypt with (webhook-destinations.ts, inbound-secrets.ts).
  const stored = [
    ...destinations.map((d) => ({
      what: `webhook destination ${d.id}'s signing secret`,
      ciphertext: d.secret_ciphertext,
      context: `webhook_destination:${d.id}`,
    })),
    ...inbound.map((s) => ({
      what: `the inbound secret of ${s.partner_id} (${s.environment})`,
      ciphertext: s.secret_ciphertext,
      context: `inbound_secret:${s.partner_id}:${s.environment}`,
    })),
  ];
  for (const s of stored) {
    try {
      box.decrypt(s.ciphertext, s.context);
    } catch (err) {
      if (err instanceof MasterKeyError) return s.what;
      throw err;
    }
  }
  return undefined;
}

/** The configuration error a process with another master key stops with (exit 78, one line). */
export function masterKeyDiffers(
  config: { MASTER_KEY?: string | undefined; DATA_DIR: string },
  undecryptable: string,
): ConfigError {
  const source = config.MASTER_KEY
    ? 'MASTER_KEY'
    : `the key file ${masterKeyFile(config.DATA_DIR)} (MASTER_KEY is not set here)`;
  return new ConfigError(
    `MASTER_KEY: this database's secrets are encrypted under another master key than ${source}: ${undecryptable} does not decrypt. Set MASTER_KEY to the key every other process of this service runs with.`,
  );
}
