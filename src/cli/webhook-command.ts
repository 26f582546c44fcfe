/**
 * `yield-service webhook …`: outbound destinations (add, list, rotate, remove), their delivery log
 * and manual replays, and the inbound secrets partners sign with. A secret is printed once, when it
 * is created or rotated; every listing shows its fingerprint only.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Config } from '../config.ts';
import type { Queryable } from '../db/client.ts';
import { createInboundSecretsRepo } from '../db/inbound-secrets.ts';
import { createPartnersRepo } from '../db/partners.ts';
import {
  createWebhookDeliveriesRepo,
  DELIVERY_STATUSES,
  type DeliveryStatus,
  MAX_DELIVERY_LIST_LIMIT,
  type WebhookDelivery,
  WebhookReplayError,
} from '../db/webhook-deliveries.ts';
import {
  createWebhookDestinationsRepo,
  MAX_ROTATION_GRACE_MS,
  type WebhookDestination,
} from '../db/webhook-destinations.ts';
import {
  createWebhookHealthRepo,
  type DestinationHealth,
  WebhookHealthError,
} from '../db/webhook-health.ts';
import { DestinationUrlError } from '../webhooks/destination-url.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../webhooks/event-catalogue.ts';
import {
  createSecretBox,
  MasterKeyError,
  masterKeyFor,
  type SecretBox,
  secretFingerprint,
} from '../webhooks/secret-box.ts';
import { type CommandContext, CommandError, table } from './shared.ts';

type Env = 'live' | 'test';

function environment(raw: string): Env {
  if (raw !== 'live' && raw !== 'test') throw new InvalidArgumentError('must be live or test');
  return raw;
}

function eventTypes(raw: string): string[] {
  const types = [
    ...new Set(
      raw
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
  if (types.length === 0) throw new InvalidArgumentError('name at least one event type');
  const known: readonly string[] = SUBSCRIBABLE_EVENT_TYPES;
  const unknown = types.filter((t) => !known.includes(t));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `unknown event type ${unknown.join(', ')} (known: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')})`,
    );
  }
  return types;
}

function status(raw: string): DeliveryStatus {
  const found = DELIVERY_STATUSES.find((s) => s === raw);
  if (!found) throw new InvalidArgumentError(`must be one of ${DELIVERY_STATUSES.join(', ')}`);
  return found;
}

function limit(raw: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_DELIVERY_LIST_LIMIT) {
    throw new InvalidArgumentError(`must be an integer from 1 to ${MAX_DELIVERY_LIST_LIMIT}`);
  }
  return n;
}

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A rotation's grace period: `0` (or `now`), or a whole number of s, m, h or d (`24h`, `7d`). */
export function parseGrace(raw: string): number {
  const text = raw.trim();
  if (text === '0' || text === 'now') return 0;
  const m = /^(\d{1,7})([smhd])$/.exec(text);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms > MAX_ROTATION_GRACE_MS) {
    throw new InvalidArgumentError(
      `must be 0, or a duration like 30m, 24h or 7d, at most ${MAX_ROTATION_GRACE_MS / 86_400_000}d`,
    );
  }
  return ms;
}

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d))?$/;

/**
 * An ISO 8601 moment: a date (midnight UTC), or a date and time with its offset (`Z` or ±hh:mm),
 * so that no reading depends on the operator's local time zone.
 */
export function parseIsoMoment(raw: string): Date {
  const m = ISO_DATE_TIME.exec(raw.trim());
  const [, y, mo, d, hh, , , zone] = m ?? [];
  if (!m || (hh !== undefined && zone === undefined)) {
    throw new InvalidArgumentError(
      'must be an ISO 8601 date (2025-01-31) or date-time with offset (2025-01-31T12:00:00Z)',
    );
  }
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (
    day.getUTCFullYear() !== Number(y) ||
    day.getUTCMonth() !== Number(mo) - 1 ||
    day.getUTCDate() !== Number(d)
  ) {
    throw new InvalidArgumentError(`${y}-${mo}-${d} is not a calendar date`);
  }
  const at = new Date(raw.trim());
  if (Number.isNaN(at.getTime())) throw new InvalidArgumentError('is not a valid date-time');
  return at;
}

/**
 * The secret box, opened on first use only: listings never need the master key, so they never
 * create DATA_DIR/master.key. A missing or wrong key is one line, not a stack.
 */
function lazySecretBox(config: Config): SecretBox {
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
  };
}

async function partnerIdOf(db: Queryable, name: string): Promise<string> {
  const partner = await createPartnersRepo(db).findByName(name);
  if (!partner) throw new CommandError(`no partner named "${name}"`, 'not_found');
  return partner.id;
}

async function partnerNames(db: Queryable): Promise<Map<string, string>> {
  return new Map((await createPartnersRepo(db).list()).map((p) => [p.id, p.name]));
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

function destinationJson(d: WebhookDestination, partner: string) {
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
    disabled_reason: d.disabledReason,
    removed_at: iso(d.removedAt),
  };
}

function healthJson(h: DestinationHealth) {
  return {
    destination_id: h.destinationId,
    status: h.disabledAt ? 'disabled' : 'active',
    disabled_at: iso(h.disabledAt),
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

const percent = (rate: number | null) =>
  rate === null ? '-' : `${(Math.floor(rate * 1000) / 10).toFixed(1)}%`;

function deliveryJson(d: WebhookDelivery) {
  return {
    id: d.id,
    event_id: d.eventId,
    event_type: d.eventType,
    destination_id: d.destinationId,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.nextAttemptAt.toISOString(),
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
async function operatorErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DestinationUrlError) throw new CommandError(err.message, 'invalid_url');
    if (err instanceof WebhookReplayError) throw new CommandError(err.message, err.code);
    if (err instanceof WebhookHealthError) throw new CommandError(err.message, err.code);
    if (err instanceof MasterKeyError) {
      throw new CommandError(`MASTER_KEY: ${err.message}`, 'master_key');
    }
    throw err;
  }
}

function printSecret(ctx: CommandContext, what: string, secret: string): void {
  ctx.print(`${what} (shown once; store it now): ${secret}`);
}

export function registerWebhookCommand(program: Command, ctx: CommandContext): void {
  const webhook = program
    .command('webhook')
    .description('outbound webhook destinations and deliveries, inbound webhook secrets');

  webhook
    .command('add')
    .description('add an HTTPS destination for a partner environment; prints its secret once')
    .requiredOption('--partner <name>', 'partner name')
    .requiredOption('--env <env>', 'live or test', environment)
    .requiredOption('--url <url>', 'https:// URL the events are POSTed to')
    .option(
      '--events <types>',
      `comma-separated event types (default: all): ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}`,
      eventTypes,
    )
    .option('--json', 'print JSON', false)
    .action(
      async (opts: {
        partner: string;
        env: Env;
        url: string;
        events?: string[];
        json: boolean;
      }) => {
        const config = ctx.config();
        const added = await operatorErrors(() =>
          ctx.withDatabase(config, async (db) => {
            const partnerId = await partnerIdOf(db, opts.partner);
            return createWebhookDestinationsRepo(db, lazySecretBox(config)).add({
              partnerId,
              environment: opts.env,
              url: opts.url,
              eventTypes: opts.events ?? null,
            });
          }),
        );
        const d = added.destination;
        if (opts.json) {
          return ctx.printJson({ ...destinationJson(d, opts.partner), secret: added.secret });
        }
        ctx.print(`Added ${d.id} for ${opts.partner} (${d.environment}): ${d.url}`);
        ctx.print(`Event types: ${d.eventTypes?.join(', ') ?? 'all'}`);
        ctx.print(`Fingerprint: ${d.secretFingerprint}`);
        printSecret(ctx, 'Signing secret', added.secret);
      },
    );

  webhook
    .command('list')
    .description(
      'list destinations: status, secret fingerprints only, when an old secret stops signing, success rate over 24 h',
    )
    .option('--partner <name>', 'only this partner')
    .option('--all', 'include removed destinations', false)
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner?: string; all: boolean; json: boolean }) => {
      const config = ctx.config();
      const rows = await ctx.withDatabase(config, async (db) => {
        const partnerId = opts.partner ? await partnerIdOf(db, opts.partner) : undefined;
        const names = await partnerNames(db);
        const list = await createWebhookDestinationsRepo(db, lazySecretBox(config)).list({
          ...(partnerId ? { partnerId } : {}),
          includeRemoved: opts.all,
        });
        const health = new Map(
          (await createWebhookHealthRepo(db).stats(list.map((d) => d.id))).map((h) => [
            h.destinationId,
            h,
          ]),
        );
        return list.map((d) => {
          const h = health.get(d.id);
          return {
            ...destinationJson(d, names.get(d.partnerId) ?? d.partnerId),
            ...(h
              ? {
                  last_24h: healthJson(h).last_24h,
                  last_success_at: iso(h.lastSuccessAt),
                  last_failure_at: iso(h.lastFailure?.at ?? null),
                }
              : {}),
          };
        });
      });
      if (opts.json) return ctx.printJson(rows);
      ctx.print(
        table([
          [
            'ID',
            'PARTNER',
            'ENV',
            'STATUS',
            'EVENTS',
            'FINGERPRINT',
            'OLD SECRET SIGNS UNTIL',
            'OK 24H',
            'LAST SUCCESS',
            'URL',
          ],
          ...rows.map((r) => [
            r.id,
            r.partner,
            r.environment,
            r.status,
            r.event_types?.join(',') ?? 'all',
            r.fingerprint,
            r.previous_secret_expires_at ?? '',
            percent(r.last_24h?.success_rate ?? null),
            r.last_success_at ?? '',
            r.url,
          ]),
        ]),
      );
      for (const r of rows) {
        if (r.disabled_reason) ctx.print(`${r.id}: ${r.disabled_reason}`);
      }
    });

  webhook
    .command('stats [id]')
    .description(
      'health of a destination (whk_…) or of all: success rate and latency over 24 h, last success, last failure, disabled reason',
    )
    .option('--json', 'print JSON', false)
    .action(async (id: string | undefined, opts: { json: boolean }) => {
      const rows = await ctx.withDatabase(ctx.config(), async (db) =>
        (await createWebhookHealthRepo(db).stats(id === undefined ? undefined : [id])).map(
          healthJson,
        ),
      );
      if (id !== undefined && rows.length === 0) {
        throw new CommandError(`no webhook destination with id ${id}`, 'not_found');
      }
      if (opts.json) return ctx.printJson(id === undefined ? rows : rows[0]);
      ctx.print(
        table([
          [
            'ID',
            'STATUS',
            'ATTEMPTS 24H',
            'OK 24H',
            'P50 MS',
            'P95 MS',
            'LAST SUCCESS',
            'LAST FAILURE',
            'FAILING SINCE',
          ],
          ...rows.map((r) => [
            r.destination_id,
            r.status,
            String(r.last_24h.attempts),
            percent(r.last_24h.success_rate),
            r.last_24h.latency_ms ? String(r.last_24h.latency_ms.p50) : '-',
            r.last_24h.latency_ms ? String(r.last_24h.latency_ms.p95) : '-',
            r.last_success_at ?? '',
            r.last_failure
              ? `${r.last_failure.at} ${r.last_failure.status_code ?? r.last_failure.error ?? ''}`
              : '',
            r.failing_since ?? '',
          ]),
        ]),
      );
      for (const r of rows) {
        if (r.disabled_reason) ctx.print(`${r.destination_id}: ${r.disabled_reason}`);
      }
    });

  webhook
    .command('enable <id>')
    .description(
      're-enable a destination (whk_…) disabled for failing, and replay every event that failed there since it started failing',
    )
    .option('--no-replay', 'do not replay what failed meanwhile')
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { replay: boolean; json: boolean }) => {
      const enabled = await operatorErrors(() =>
        ctx.withDatabase(ctx.config(), (db) =>
          createWebhookHealthRepo(db).enable(id, { replay: opts.replay }),
        ),
      );
      if (opts.json) {
        return ctx.printJson({
          id,
          failing_since: iso(enabled.failingSince),
          replayed: enabled.replayed.map(deliveryJson),
        });
      }
      ctx.print(`Enabled ${id}.`);
      if (opts.replay) {
        ctx.print(
          `Replayed ${enabled.replayed.length} failed event(s) since ${iso(enabled.failingSince) ?? 'it was disabled'}.`,
        );
      }
    });

  webhook
    .command('rotate <id>')
    .description(
      'replace the signing secret of a destination (whk_…); prints the new one once; the previous one keeps signing for --grace',
    )
    .option(
      '--grace <duration>',
      'how long the previous secret keeps signing beside the new one (0, 30m, 24h, 7d…)',
      parseGrace,
      24 * 3_600_000,
    )
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { grace: number; json: boolean }) => {
      const config = ctx.config();
      const rotated = await operatorErrors(() =>
        ctx.withDatabase(config, (db) =>
          createWebhookDestinationsRepo(db, lazySecretBox(config)).rotate(id, {
            graceMs: opts.grace,
          }),
        ),
      );
      if (!rotated)
        throw new CommandError(`no active webhook destination with id ${id}`, 'not_found');
      const d = rotated.destination;
      if (opts.json) {
        return ctx.printJson({
          id: d.id,
          fingerprint: d.secretFingerprint,
          secret_rotated_at: iso(d.secretRotatedAt),
          previous_secret_fingerprint: d.previousSecret?.fingerprint ?? null,
          previous_secret_expires_at: iso(d.previousSecret?.expiresAt ?? null),
          secret: rotated.secret,
        });
      }
      ctx.print(
        d.previousSecret
          ? `Rotated the secret of ${d.id}. The previous one (${d.previousSecret.fingerprint}) keeps signing until ${d.previousSecret.expiresAt.toISOString()}: webhook-signature carries both until then; X-Service-Signature uses the new one now.`
          : `Rotated the secret of ${d.id}; the previous one no longer signs.`,
      );
      ctx.print(`Fingerprint: ${d.secretFingerprint}`);
      printSecret(ctx, 'Signing secret', rotated.secret);
    });

  webhook
    .command('remove <id>')
    .description('remove a destination (whk_…): no new deliveries; its pending ones are failed')
    .action(async (id: string) => {
      const config = ctx.config();
      const removed = await ctx.withDatabase(config, (db) =>
        createWebhookDestinationsRepo(db, lazySecretBox(config)).remove(id),
      );
      if (!removed)
        throw new CommandError(`no active webhook destination with id ${id}`, 'not_found');
      ctx.print(`Removed ${id}.`);
    });

  webhook
    .command('ping <id>')
    .description(
      'send a test event (ping) to a destination (whk_…), whatever event types it subscribes to',
    )
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { json: boolean }) => {
      const sent = await operatorErrors(() =>
        ctx.withDatabase(ctx.config(), (db) => createWebhookDeliveriesRepo(db).enqueuePing(id)),
      );
      if (opts.json) return ctx.printJson(deliveryJson(sent.delivery));
      ctx.print(`Queued test event ${sent.eventId} to ${id} as ${sent.delivery.id}.`);
      ctx.print(`Follow it with: yield-service webhook deliveries --event ${sent.eventId}`);
    });

  webhook
    .command('deliveries')
    .description('the delivery log, newest first')
    .option('--destination <id>', 'only this destination (whk_…)')
    .option('--event <id>', 'only this event (evt_…)')
    .option('--status <status>', DELIVERY_STATUSES.join(', '), status)
    .option('--limit <n>', `at most this many (1 to ${MAX_DELIVERY_LIST_LIMIT})`, limit, 100)
    .option('--json', 'print JSON', false)
    .action(
      async (opts: {
        destination?: string;
        event?: string;
        status?: DeliveryStatus;
        limit: number;
        json: boolean;
      }) => {
        const rows = await ctx.withDatabase(ctx.config(), async (db) =>
          (
            await createWebhookDeliveriesRepo(db).list({
              ...(opts.destination ? { destinationId: opts.destination } : {}),
              ...(opts.event ? { eventId: opts.event } : {}),
              ...(opts.status ? { status: opts.status } : {}),
              limit: opts.limit,
            })
          ).map(deliveryJson),
        );
        if (opts.json) return ctx.printJson(rows);
        ctx.print(
          table([
            ['ID', 'EVENT', 'TYPE', 'DESTINATION', 'STATUS', 'ATTEMPTS', 'LAST', 'CREATED'],
            ...rows.map((r) => [
              r.id,
              r.event_id,
              r.event_type,
              r.destination_id,
              r.status,
              String(r.attempts),
              r.last_response_code !== null ? String(r.last_response_code) : (r.last_error ?? ''),
              r.created_at,
            ]),
          ]),
        );
      },
    );

  webhook
    .command('replay')
    .description(
      'new deliveries (3 fresh attempts) of stored events: --event [--destination], or --destination --failed-since',
    )
    .option('--event <id>', 'replay this event (evt_…), to --destination or every subscribed one')
    .option('--destination <id>', 'the destination (whk_…)')
    .addOption(
      new Option(
        '--failed-since <iso>',
        'replay every event whose delivery to --destination failed, of deliveries created since then',
      )
        .argParser(parseIsoMoment)
        .conflicts('event'),
    )
    .option('--json', 'print JSON', false)
    .action(
      async (opts: { event?: string; destination?: string; failedSince?: Date; json: boolean }) => {
        if (opts.event === undefined && opts.failedSince === undefined) {
          throw new CommandError(
            'name --event EVT_ID [--destination WHK_ID], or --destination WHK_ID --failed-since ISO_DATE_TIME',
            'invalid_arguments',
          );
        }
        const since = opts.failedSince;
        if (since !== undefined) {
          const destination = opts.destination;
          if (destination === undefined) {
            throw new CommandError(
              '--failed-since needs --destination WHK_ID',
              'invalid_arguments',
            );
          }
          const replayed = await operatorErrors(() =>
            ctx.withDatabase(ctx.config(), (db) =>
              createWebhookDeliveriesRepo(db).replayFailed(destination, since),
            ),
          );
          if (opts.json) {
            return ctx.printJson({
              count: replayed.count,
              deliveries: replayed.deliveries.map(deliveryJson),
            });
          }
          ctx.print(
            `Replayed ${replayed.count} failed event(s) of ${destination} since ${since.toISOString()}.`,
          );
          for (const d of replayed.deliveries) ctx.print(`${d.id}  ${d.eventId}  ${d.eventType}`);
          return;
        }
        const eventId = opts.event as string;
        const replayed = await operatorErrors(() =>
          ctx.withDatabase(ctx.config(), (db) =>
            createWebhookDeliveriesRepo(db).replayEvent(eventId, opts.destination),
          ),
        );
        if (replayed.length === 0) {
          throw new CommandError(
            `no active destination subscribes to event ${eventId}; nothing replayed`,
            'no_destination',
          );
        }
        if (opts.json) return ctx.printJson(replayed.map(deliveryJson));
        for (const d of replayed) {
          ctx.print(
            `Replaying ${d.eventId} to ${d.destinationId} as ${d.id}${d.replayOf ? ` (replay of ${d.replayOf})` : ''}.`,
          );
        }
      },
    );

  const inbound = webhook
    .command('inbound-secret')
    .description('the secrets partners sign inbound webhooks with (one per partner environment)');

  inbound
    .command('set')
    .description("create or rotate a partner environment's inbound secret; prints it once")
    .requiredOption('--partner <name>', 'partner name')
    .requiredOption('--env <env>', 'live or test', environment)
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner: string; env: Env; json: boolean }) => {
      const config = ctx.config();
      const set = await operatorErrors(() =>
        ctx.withDatabase(config, async (db) => {
          const partnerId = await partnerIdOf(db, opts.partner);
          const result = await createInboundSecretsRepo(db, lazySecretBox(config)).set(
            partnerId,
            opts.env,
          );
          return { ...result, fingerprint: secretFingerprint(result.secret) };
        }),
      );
      if (opts.json) {
        return ctx.printJson({
          partner: opts.partner,
          environment: opts.env,
          rotated: set.rotated,
          fingerprint: set.fingerprint,
          secret: set.secret,
        });
      }
      ctx.print(
        set.rotated
          ? `Rotated the inbound secret of ${opts.partner} (${opts.env}); the previous one no longer verifies.`
          : `Created the inbound secret of ${opts.partner} (${opts.env}).`,
      );
      ctx.print(`Fingerprint: ${set.fingerprint}`);
      printSecret(ctx, 'Inbound secret', set.secret);
    });

  inbound
    .command('list')
    .description('list inbound secrets (fingerprints only)')
    .option('--partner <name>', 'only this partner')
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner?: string; json: boolean }) => {
      const config = ctx.config();
      const rows = await ctx.withDatabase(config, async (db) => {
        const partnerId = opts.partner ? await partnerIdOf(db, opts.partner) : undefined;
        const names = await partnerNames(db);
        return (await createInboundSecretsRepo(db, lazySecretBox(config)).list(partnerId)).map(
          (s) => ({
            partner: names.get(s.partnerId) ?? s.partnerId,
            environment: s.environment,
            fingerprint: s.fingerprint,
            created_at: s.createdAt.toISOString(),
            rotated_at: iso(s.rotatedAt),
          }),
        );
      });
      if (opts.json) return ctx.printJson(rows);
      ctx.print(
        table([
          ['PARTNER', 'ENV', 'FINGERPRINT', 'CREATED', 'ROTATED'],
          ...rows.map((r) => [
            r.partner,
            r.environment,
            r.fingerprint,
            r.created_at,
            r.rotated_at ?? '',
          ]),
        ]),
      );
    });
}
