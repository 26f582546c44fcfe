/**
 * `yield-service webhook deliveries|replay`: the delivery log, and new deliveries of stored events
 * (one event, or every event that failed at a destination since a moment).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  createWebhookDeliveriesRepo,
  DELIVERY_STATUSES,
  type DeliveryStatus,
  MAX_DELIVERY_LIST_LIMIT,
} from '../db/webhook-deliveries.ts';
import { OPERATOR } from '../operations/actor.ts';
import { replayEvent, replayFailedSince } from '../operations/webhook-replays.ts';
import { integerInRange, parseIsoMoment } from './arguments.ts';
import { type CommandContext, CommandError, table } from './shared.ts';
import { deliveryJson, lazySecretBox, operatorErrors } from './webhook-support.ts';

function status(raw: string): DeliveryStatus {
  const found = DELIVERY_STATUSES.find((s) => s === raw);
  if (!found) throw new InvalidArgumentError(`must be one of ${DELIVERY_STATUSES.join(', ')}`);
  return found;
}

export function registerWebhookDeliveryCommands(webhook: Command, ctx: CommandContext): void {
  webhook
    .command('deliveries')
    .description('the delivery log, newest first')
    .option('--destination <id>', 'only this destination (whk_…)')
    .option('--event <id>', 'only this event (evt_…)')
    .option('--status <status>', DELIVERY_STATUSES.join(', '), status)
    .option(
      '--limit <n>',
      `at most this many (1 to ${MAX_DELIVERY_LIST_LIMIT})`,
      integerInRange(1, MAX_DELIVERY_LIST_LIMIT),
      100,
    )
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
          const config = ctx.config();
          const replayed = await operatorErrors(() =>
            ctx.withDatabase(config, (db) =>
              replayFailedSince(db, lazySecretBox(config), OPERATOR, destination, since),
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
        const config = ctx.config();
        const replayed = await operatorErrors(() =>
          ctx.withDatabase(config, (db) =>
            replayEvent(db, lazySecretBox(config), OPERATOR, eventId, opts.destination),
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
}
