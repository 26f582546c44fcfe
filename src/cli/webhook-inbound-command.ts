/**
 * `yield-service webhook inbound-secret set|list`: the secret each partner environment signs its
 * inbound webhooks with. Printed once, when created or rotated; listings show its fingerprint.
 */
import { type Command, Option } from 'commander';
import { createInboundSecretsRepo } from '../db/inbound-secrets.ts';
import { OPERATOR } from '../operations/actor.ts';
import { setInboundSecret } from '../operations/inbound-secrets.ts';
import { secretFingerprint } from '../webhooks/secret-box.ts';
import { type Environment, environment, partnerNamed } from './arguments.ts';
import { type CommandContext, table } from './shared.ts';
import { parseGrace } from './webhook-destinations-command.ts';
import {
  iso,
  lazySecretBox,
  operatorErrors,
  partnerNames,
  printSecret,
  secretBoxForWriting,
} from './webhook-support.ts';

export function registerWebhookInboundCommands(webhook: Command, ctx: CommandContext): void {
  const inbound = webhook
    .command('inbound-secret')
    .description('the secrets partners sign inbound webhooks with (one per partner environment)');

  inbound
    .command('set')
    .description(
      "create or rotate a partner environment's inbound secret; prints it once; on a rotation the previous one keeps verifying for --grace",
    )
    .requiredOption('--partner <name>', 'partner name')
    .requiredOption('--env <env>', 'live or test', environment)
    .addOption(
      // Shown as "24h" (as `key roll --expires`), not the milliseconds it parses to.
      new Option(
        '--grace <duration>',
        'on a rotation, how long the previous secret keeps verifying beside the new one (0, 30m, 24h, 7d…)',
      )
        .argParser(parseGrace)
        .default(24 * 3_600_000, '"24h"'),
    )
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner: string; env: Environment; grace: number; json: boolean }) => {
      const config = ctx.config();
      const set = await operatorErrors(() =>
        ctx.withDatabase(config, async (db) => {
          const partnerId = (await partnerNamed(db, opts.partner)).id;
          const result = await setInboundSecret(
            db,
            await secretBoxForWriting(config, db),
            OPERATOR,
            {
              partnerId,
              environment: opts.env,
              graceMs: opts.grace,
            },
          );
          return { ...result, fingerprint: secretFingerprint(result.secret) };
        }),
      );
      if (opts.json) {
        return ctx.printJson({
          partner: opts.partner,
          environment: opts.env,
          rotated: set.rotated,
          previous_expires_at: set.previousExpiresAt?.toISOString() ?? null,
          fingerprint: set.fingerprint,
          secret: set.secret,
        });
      }
      ctx.print(
        set.rotated
          ? set.previousExpiresAt
            ? `Rotated the inbound secret of ${opts.partner} (${opts.env}); the previous one keeps verifying until ${set.previousExpiresAt.toISOString()}.`
            : `Rotated the inbound secret of ${opts.partner} (${opts.env}); the previous one no longer verifies.`
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
        const partnerId = opts.partner ? (await partnerNamed(db, opts.partner)).id : undefined;
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
