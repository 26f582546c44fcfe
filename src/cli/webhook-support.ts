/**
 * What the `webhook …` commands share: how destinations, deliveries and health print as JSON, how
 * repository refusals become one-line operator errors, and the secret box opened only when a
 * command needs it.
 */
import type { Config } from '../config.ts';
import type { Queryable } from '../db/client.ts';
import { masterKeyDiffers, masterKeyMismatch } from '../db/master-key-check.ts';
import { createPartnersRepo } from '../db/partners.ts';
import { type WebhookDelivery, WebhookReplayError } from '../db/webhook-deliveries.ts';
import { DestinationEventTypesError, type WebhookDestination } from '../db/webhook-destinations.ts';
import { type DestinationHealth, WebhookHealthError } from '../db/webhook-health.ts';
import { DestinationAddressError, DestinationUrlError } from '../webhooks/destination-url.ts';
import {
  createSecretBox,
  MasterKeyError,
  masterKeyFor,
  type SecretBox,
} from '../webhooks/secret-box.ts';
import { type CommandContext, CommandError } from './shared.ts';

/**
 * The secret box, opened on first use only: listings never need the master key, so they never
 * create DATA_DIR/master.key. A missing or wrong key is one line, not a stack.
 */
export function lazySecretBox(config: Config): SecretBox {
  let box: SecretBox | undefined;
  const open = (): SecretBox => {
    try {
      box ??= createSecretBox(masterKeyFor(config));
      return box;
    } catch (err) {
      if (err instanceof MasterKeyError) {
        throw new CommandError(`MASTER_KEY: ${err.message}`, 'master_key');
      }
      throw err;
    }
  };
  return {
    encrypt: (secret, context) => open().encrypt(secret, context),
    decrypt: (ciphertext, context) => open().decrypt(ciphertext, context),
    deriveKey: (purpose) => open().deriveKey(purpose),
  };
}

/**
 * The box for a command that stores a secret, checked against the secrets already stored: a
 * command run without the service's MASTER_KEY (a key file of its own is made then) would store
 * secrets the service can never read (master-key-check.ts).
 */
export async function secretBoxForWriting(config: Config, db: Queryable): Promise<SecretBox> {
  const box = lazySecretBox(config);
  const undecryptable = await masterKeyMismatch(db, box);
  if (undecryptable) throw masterKeyDiffers(config, undecryptable);
  return box;
}

/** Partner names by id, for listings across partners. */
export async function partnerNames(db: Queryable): Promise<Map<string, string>> {
  return new Map((await createPartnersRepo(db).list()).map((p) => [p.id, p.name]));
}

export const iso = (d: Date | null) => d?.toISOString() ?? null;

export function destinationJson(d: WebhookDestination, partner: string) {
  return {
    id: d.id,
    partner,
    environment: d.environment,
    url: d.url,
    event_types: d.eventTypes,
    fingerprint: d.secretFingerprint,
    created_at: d.createdAt.toISOString(),
    secret_rotated_at: iso(d.secretRotatedAt),
    previous_secret_fingerprint: d.previousSecret?.fingerprint ?? null,
    previous_secret_expires_at: iso(d.previousSecret?.expiresAt ?? null),
    status: d.removedAt ? 'removed' : d.disabledAt ? 'disabled' : 'active',
    disabled_at: iso(d.disabledAt),
    disabled_by: d.disabledBy,
    disabled_reason: d.disabledReason,
    removed_at: iso(d.removedAt),
  };
}

export function healthJson(h: DestinationHealth) {
  return {
    destination_id: h.destinationId,
    status: h.disabledAt ? 'disabled' : 'active',
    disabled_at: iso(h.disabledAt),
    disabled_by: h.disabledBy,
    disabled_reason: h.disabledReason,
    failing_since: iso(h.failingSince),
    last_24h: {
      attempts: h.window.attempts,
      succeeded: h.window.succeeded,
      success_rate: h.window.successRate,
      latency_ms: h.window.latencyMs,
    },
    last_success_at: iso(h.lastSuccessAt),
    last_failure: h.lastFailure && {
      at: h.lastFailure.at.toISOString(),
      status_code: h.lastFailure.statusCode,
      error: h.lastFailure.error,
    },
  };
}

export const percent = (rate: number | null) =>
  rate === null ? '-' : `${(Math.floor(rate * 1000) / 10).toFixed(1)}%`;

export function deliveryJson(d: WebhookDelivery) {
  return {
    id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    destination_id: d.destinationId,
    status: d.status,
    attempts: d.attempts,
    // Only a pending delivery has a next attempt (a failed one keeps its last schedule in storage).
    next_attempt_at: d.status === 'pending' ? d.nextAttemptAt.toISOString() : null,
    last_attempt_at: iso(d.lastAttemptAt),
    last_response_code: d.lastResponseCode,
    last_response_body: d.lastResponseBody,
    last_error: d.lastError,
    replay_of: d.replayOf,
    created_at: d.createdAt.toISOString(),
    updated_at: d.updatedAt.toISOString(),
    delivered_at: iso(d.deliveredAt),
    failed_at: iso(d.failedAt),
  };
}

/** Repository refusals as operator errors (one line, exit 1). */
export async function operatorErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // The operator, unlike a partner, may let a range through (development, tests).
    if (err instanceof DestinationAddressError) {
      throw new CommandError(
        `${err.message} (or let its range through with WEBHOOK_ALLOWED_CIDRS, for development)`,
        'address_not_public',
      );
    }
    if (err instanceof DestinationUrlError) throw new CommandError(err.message, 'invalid_url');
    if (err instanceof DestinationEventTypesError) {
      throw new CommandError(err.message, 'invalid_event_types');
    }
    if (err instanceof WebhookReplayError) throw new CommandError(err.message, err.code);
    if (err instanceof WebhookHealthError) throw new CommandError(err.message, err.code);
    if (err instanceof MasterKeyError) {
      throw new CommandError(`MASTER_KEY: ${err.message}`, 'master_key');
    }
    throw err;
  }
}

export function printSecret(ctx: CommandContext, what: string, secret: string): void {
  ctx.print(`${what} (shown once; store it now): ${secret}`);
}
