/**
 * `yield-service webhook add|list|stats|update|disable|enable|rotate|remove|ping`: a partner
 * environment's outbound destinations, their health and their signing secrets. A secret is printed once, when it is created
 * or rotated; every listing shows its fingerprint only.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { createWebhookDeliveriesRepo } from '../db/webhook-deliveries.ts';
import {
  createWebhookDestinationsRepo,
  MAX_ROTATION_GRACE_MS,
} from '../db/webhook-destinations.ts';
import { createWebhookHealthRepo, MAX_DISABLE_NOTE_LENGTH } from '../db/webhook-health.ts';
import { OPERATOR } from '../operations/actor.ts';
import {
  addDestination,
  disableDestination,
  enableDestination,
  pingDestination,
  removeDestination,
  rotateDestinationSecret,
  updateDestination,
} from '../operations/webhook-destinations.ts';
import { configuredAddressPolicy } from '../webhooks/address-policy.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../webhooks/event-catalogue.ts';
import { type Environment, environment, partnerNamed } from './arguments.ts';
import { type CommandContext, CommandError, table } from './shared.ts';
import {
  deliveryJson,
  destinationJson,
  healthJson,
  iso,
  lazySecretBox,
  operatorErrors,
  partnerNames,
  percent,
  printSecret,
  secretBoxForWriting,
} from './webhook-support.ts';

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

export function registerWebhookDestinationCommands(webhook: Command, ctx: CommandContext): void {
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
        env: Environment;
        url: string;
        events?: string[];
        json: boolean;
      }) => {
        const config = ctx.config();
        const added = await operatorErrors(() =>
          ctx.withDatabase(config, async (db) => {
            const partnerId = (await partnerNamed(db, opts.partner)).id;
            const box = await secretBoxForWriting(config, db);
            return addDestination(db, box, configuredAddressPolicy(config), OPERATOR, {
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
        const partnerId = opts.partner ? (await partnerNamed(db, opts.partner)).id : undefined;
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
      're-enable a destination (whk_…) disabled for failing or by hand, and replay every event that failed there since it started failing (or since it was disabled)',
    )
    .option('--no-replay', 'do not replay what failed meanwhile')
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { replay: boolean; json: boolean }) => {
      const config = ctx.config();
      const enabled = await operatorErrors(() =>
        ctx.withDatabase(config, (db) =>
          enableDestination(db, lazySecretBox(config), OPERATOR, id, { replay: opts.replay }),
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
    .command('update <id>')
    .description(
      'change the URL (https:// only, checked as on add) and/or the event types of a destination (whk_…); applies from now on: pending retries go to the new URL',
    )
    .option('--url <url>', 'the new https:// URL')
    .addOption(
      new Option(
        '--events <types>',
        `the new comma-separated event types: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}`,
      ).argParser(eventTypes),
    )
    .addOption(
      new Option('--all-events', 'subscribe to every event type, including later ones').conflicts(
        'events',
      ),
    )
    .option('--json', 'print JSON', false)
    .action(
      async (
        id: string,
        opts: { url?: string; events?: string[]; allEvents?: boolean; json: boolean },
      ) => {
        if (opts.url === undefined && opts.events === undefined && !opts.allEvents) {
          throw new CommandError(
            'name what to change: --url URL, --events TYPES or --all-events',
            'invalid_arguments',
          );
        }
        const config = ctx.config();
        const updated = await operatorErrors(() =>
          ctx.withDatabase(config, async (db) => {
            const box = lazySecretBox(config);
            const addresses = configuredAddressPolicy(config);
            const d = await updateDestination(db, box, addresses, OPERATOR, id, {
              ...(opts.url !== undefined ? { url: opts.url } : {}),
              ...(opts.allEvents ? { eventTypes: null } : {}),
              ...(opts.events !== undefined ? { eventTypes: opts.events } : {}),
            });
            return d && { d, partner: (await partnerNames(db)).get(d.partnerId) ?? d.partnerId };
          }),
        );
        if (!updated) {
          throw new CommandError(`no active webhook destination with id ${id}`, 'not_found');
        }
        const { d, partner } = updated;
        if (opts.json) return ctx.printJson(destinationJson(d, partner));
        ctx.print(`Updated ${d.id} for ${partner} (${d.environment}): ${d.url}`);
        ctx.print(`Event types: ${d.eventTypes?.join(', ') ?? 'all'}`);
      },
    );

  webhook
    .command('disable <id>')
    .description(
      'disable a destination (whk_…) by hand: nothing is sent to it; its pending deliveries and the events meanwhile are failed, and replayed by `webhook enable`',
    )
    .option(
      '--note <text>',
      `why, kept in the reason the partner reads (at most ${MAX_DISABLE_NOTE_LENGTH} characters)`,
    )
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { note?: string; json: boolean }) => {
      const config = ctx.config();
      const disabled = await operatorErrors(() =>
        ctx.withDatabase(config, (db) =>
          disableDestination(db, lazySecretBox(config), OPERATOR, id, {
            by: 'the operator',
            note: opts.note,
          }),
        ),
      );
      if (opts.json) {
        return ctx.printJson({
          id,
          status: 'disabled',
          disabled_at: disabled.disabledAt.toISOString(),
          disabled_by: 'manual',
          disabled_reason: disabled.reason,
          failed_pending: disabled.failedPending,
        });
      }
      ctx.print(`Disabled ${id}. ${disabled.reason}`);
      ctx.print(
        `Pending deliveries failed: ${disabled.failedPending}. Re-enable with: yield-service webhook enable ${id}`,
      );
    });

  webhook
    .command('rotate <id>')
    .description(
      'replace the signing secret of a destination (whk_…); prints the new one once; the previous one keeps signing for --grace',
    )
    .addOption(
      // Shown as "24h" (as `key roll --expires`), not the milliseconds it parses to.
      new Option(
        '--grace <duration>',
        'how long the previous secret keeps signing beside the new one (0, 30m, 24h, 7d…)',
      )
        .argParser(parseGrace)
        .default(24 * 3_600_000, '"24h"'),
    )
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { grace: number; json: boolean }) => {
      const config = ctx.config();
      const rotated = await operatorErrors(() =>
        ctx.withDatabase(config, async (db) =>
          rotateDestinationSecret(
            db,
            await secretBoxForWriting(config, db),
            OPERATOR,
            id,
            opts.grace,
          ),
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
        removeDestination(db, lazySecretBox(config), OPERATOR, id),
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
      const config = ctx.config();
      const sent = await operatorErrors(() =>
        ctx.withDatabase(config, (db) => pingDestination(db, lazySecretBox(config), OPERATOR, id)),
      );
      if (opts.json) return ctx.printJson(deliveryJson(sent.delivery));
      ctx.print(`Queued test event ${sent.eventId} to ${id} as ${sent.delivery.id}.`);
      ctx.print(`Follow it with: yield-service webhook deliveries --event ${sent.eventId}`);
    });
}
