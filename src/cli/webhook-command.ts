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
  type WebhookDestination,
} from '../db/webhook-destinations.ts';
import { DestinationUrlError } from '../webhooks/destination-url.ts';
import { OUTBOUND_EVENT_TYPES } from '../webhooks/event-catalogue.ts';
import {
  createSecretBox,
  MasterKeyError,
  masterKeyFor,
  type SecretBox,
  secretFingerprint,
} from '../webhooks/secret-box.ts';
import { CommandError, commandConfig, print, printJson, table, withDatabase } from './shared.ts';

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
  const known: readonly string[] = OUTBOUND_EVENT_TYPES;
  const unknown = types.filter((t) => !known.includes(t));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      `unknown event type ${unknown.join(', ')} (known: ${OUTBOUND_EVENT_TYPES.join(', ')})`,
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
    removed_at: iso(d.removedAt),
  };
}

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
    if (err instanceof MasterKeyError) {
      throw new CommandError(`MASTER_KEY: ${err.message}`, 'master_key');
    }
    throw err;
  }
}

function printSecret(what: string, secret: string): void {
  print(`${what} (shown once; store it now): ${secret}`);
}

export function registerWebhookCommand(program: Command): void {
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
      `comma-separated event types (default: all): ${OUTBOUND_EVENT_TYPES.join(', ')}`,
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
        const config = commandConfig();
        const added = await operatorErrors(() =>
          withDatabase(config, async (db) => {
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
          return printJson({ ...destinationJson(d, opts.partner), secret: added.secret });
        }
        print(`Added ${d.id} for ${opts.partner} (${d.environment}): ${d.url}`);
        print(`Event types: ${d.eventTypes?.join(', ') ?? 'all'}`);
        print(`Fingerprint: ${d.secretFingerprint}`);
        printSecret('Signing secret', added.secret);
      },
    );

  webhook
    .command('list')
    .description('list destinations (secret fingerprints only)')
    .option('--partner <name>', 'only this partner')
    .option('--all', 'include removed destinations', false)
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner?: string; all: boolean; json: boolean }) => {
      const config = commandConfig();
      const rows = await withDatabase(config, async (db) => {
        const partnerId = opts.partner ? await partnerIdOf(db, opts.partner) : undefined;
        const names = await partnerNames(db);
        const list = await createWebhookDestinationsRepo(db, lazySecretBox(config)).list({
          ...(partnerId ? { partnerId } : {}),
          includeRemoved: opts.all,
        });
        return list.map((d) => destinationJson(d, names.get(d.partnerId) ?? d.partnerId));
      });
      if (opts.json) return printJson(rows);
      print(
        table([
          ['ID', 'PARTNER', 'ENV', 'STATUS', 'EVENTS', 'FINGERPRINT', 'URL'],
          ...rows.map((r) => [
            r.id,
            r.partner,
            r.environment,
            r.removed_at ? 'removed' : 'active',
            r.event_types?.join(',') ?? 'all',
            r.fingerprint,
            r.url,
          ]),
        ]),
      );
    });

  webhook
    .command('rotate <id>')
    .description('replace the signing secret of a destination (whk_…); prints the new one once')
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { json: boolean }) => {
      const config = commandConfig();
      const rotated = await operatorErrors(() =>
        withDatabase(config, (db) =>
          createWebhookDestinationsRepo(db, lazySecretBox(config)).rotate(id),
        ),
      );
      if (!rotated)
        throw new CommandError(`no active webhook destination with id ${id}`, 'not_found');
      const d = rotated.destination;
      if (opts.json) {
        return printJson({
          id: d.id,
          fingerprint: d.secretFingerprint,
          secret_rotated_at: iso(d.secretRotatedAt),
          secret: rotated.secret,
        });
      }
      print(`Rotated the secret of ${d.id}; the previous one no longer signs.`);
      print(`Fingerprint: ${d.secretFingerprint}`);
      printSecret('Signing secret', rotated.secret);
    });

  webhook
    .command('remove <id>')
    .description('remove a destination (whk_…): no new deliveries; its pending ones are failed')
    .action(async (id: string) => {
      const config = commandConfig();
      const removed = await withDatabase(config, (db) =>
        createWebhookDestinationsRepo(db, lazySecretBox(config)).remove(id),
      );
      if (!removed)
        throw new CommandError(`no active webhook destination with id ${id}`, 'not_found');
      print(`Removed ${id}.`);
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
        const rows = await withDatabase(commandConfig(), async (db) =>
          (
            await createWebhookDeliveriesRepo(db).list({
              ...(opts.destination ? { destinationId: opts.destination } : {}),
              ...(opts.event ? { eventId: opts.event } : {}),
              ...(opts.status ? { status: opts.status } : {}),
              limit: opts.limit,
            })
          ).map(deliveryJson),
        );
        if (opts.json) return printJson(rows);
        print(
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
            withDatabase(commandConfig(), (db) =>
              createWebhookDeliveriesRepo(db).replayFailed(destination, since),
            ),
          );
          if (opts.json) {
            return printJson({
              count: replayed.count,
              deliveries: replayed.deliveries.map(deliveryJson),
            });
          }
          print(
            `Replayed ${replayed.count} failed event(s) of ${destination} since ${since.toISOString()}.`,
          );
          for (const d of replayed.deliveries) print(`${d.id}  ${d.eventId}  ${d.eventType}`);
          return;
        }
        const eventId = opts.event as string;
        const replayed = await operatorErrors(() =>
          withDatabase(commandConfig(), (db) =>
            createWebhookDeliveriesRepo(db).replayEvent(eventId, opts.destination),
          ),
        );
        if (replayed.length === 0) {
          throw new CommandError(
            `no active destination subscribes to event ${eventId}; nothing replayed`,
            'no_destination',
          );
        }
        if (opts.json) return printJson(replayed.map(deliveryJson));
        for (const d of replayed) {
          print(
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
      const config = commandConfig();
      const set = await operatorErrors(() =>
        withDatabase(config, async (db) => {
          const partnerId = await partnerIdOf(db, opts.partner);
          const result = await createInboundSecretsRepo(db, lazySecretBox(config)).set(
            partnerId,
            opts.env,
          );
          return { ...result, fingerprint: secretFingerprint(result.secret) };
        }),
      );
      if (opts.json) {
        return printJson({
          partner: opts.partner,
          environment: opts.env,
          rotated: set.rotated,
          fingerprint: set.fingerprint,
          secret: set.secret,
        });
      }
      print(
        set.rotated
          ? `Rotated the inbound secret of ${opts.partner} (${opts.env}); the previous one no longer verifies.`
          : `Created the inbound secret of ${opts.partner} (${opts.env}).`,
      );
      print(`Fingerprint: ${set.fingerprint}`);
      printSecret('Inbound secret', set.secret);
    });

  inbound
    .command('list')
    .description('list inbound secrets (fingerprints only)')
    .option('--partner <name>', 'only this partner')
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner?: string; json: boolean }) => {
      const config = commandConfig();
      const rows = await withDatabase(config, async (db) => {
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
      if (opts.json) return printJson(rows);
      print(
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
