/**
 * `yield-service webhook …`: outbound destinations (webhook-destinations-command.ts), their
 * delivery log and manual replays (webhook-deliveries-command.ts), and the inbound secrets partners
 * sign with (webhook-inbound-command.ts).
 */
import type { Command } from 'commander';
import type { CommandContext } from './shared.ts';
import { registerWebhookDeliveryCommands } from './webhook-deliveries-command.ts';
import { registerWebhookDestinationCommands } from './webhook-destinations-command.ts';
import { registerWebhookInboundCommands } from './webhook-inbound-command.ts';

export function registerWebhookCommand(program: Command, ctx: CommandContext): void {
  const webhook = program
    .command('webhook')
    .description('outbound webhook destinations and deliveries, inbound webhook secrets');
  registerWebhookDestinationCommands(webhook, ctx);
  registerWebhookDeliveryCommands(webhook, ctx);
  registerWebhookInboundCommands(webhook, ctx);
}
