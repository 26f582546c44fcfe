/**
 * `yield-service key create|revoke|roll|list`: partner API keys. The full key is printed once, at
 * creation; afterwards only its prefix and last four characters are ever shown. Every change is in
 * the partner's portal audit log, by "operator", as the portal records its members' changes.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { maskKey } from '../db/api-key-material.ts';
import {
  createApiKeysRepo,
  isRollOverlap,
  keyStatus,
  ROLL_OVERLAPS,
  type RollOverlap,
} from '../db/api-keys.ts';
import { OPERATOR } from '../operations/actor.ts';
import { createKey, revokeKey, rollKey } from '../operations/keys.ts';
import { environment, partnerNamed } from './arguments.ts';
import { type CommandContext, CommandError, table } from './shared.ts';

function overlap(raw: string): RollOverlap {
  if (!isRollOverlap(raw)) {
    throw new InvalidArgumentError(`must be one of ${Object.keys(ROLL_OVERLAPS).join(', ')}`);
  }
  return raw;
}

export function registerKeyCommand(program: Command, ctx: CommandContext): void {
  const key = program.command('key').description('partner API keys');

  key
    .command('create')
    .description('create a key for a partner and environment; prints the full key once')
    .requiredOption('--partner <name>', 'partner name')
    .requiredOption('--env <env>', 'live or test', environment)
    .option('--name <label>', 'a label to recognise the key by')
    .option('--json', 'print JSON', false)
    .action(
      async (opts: { partner: string; env: 'live' | 'test'; name?: string; json: boolean }) => {
        const created = await ctx.withDatabase(ctx.config(), async (db) => {
          const partner = await partnerNamed(db, opts.partner);
          return createKey(db, OPERATOR, {
            partnerId: partner.id,
            environment: opts.env,
            name: opts.name,
          });
        });
        if (opts.json) {
          ctx.printJson({
            id: created.record.id,
            partner: created.record.partnerName,
            environment: created.record.environment,
            api_key: created.key,
          });
        } else {
          ctx.print(
            `Created ${created.record.id} for ${created.record.partnerName} (${created.record.environment}).`,
          );
          ctx.print(`API key (shown once; store it now): ${created.key}`);
        }
      },
    );

  key
    .command('revoke <id>')
    .description('revoke a key by its id (key_…); it then answers 401 revoked_api_key')
    .action(async (id: string) => {
      const revoked = await ctx.withDatabase(ctx.config(), (db) => revokeKey(db, OPERATOR, id));
      if (!revoked) throw new CommandError(`no active key with id ${id}`, 'not_found');
      ctx.print(`Revoked ${id}.`);
    });

  key
    .command('roll <id>')
    .description(
      'replace a key by a new one with the same name; the old key works until --expires (prints the new key once)',
    )
    .option(
      '--expires <when>',
      `when the old key stops: ${Object.keys(ROLL_OVERLAPS).join(', ')}`,
      overlap,
      '24h',
    )
    .option('--json', 'print JSON', false)
    .action(async (id: string, opts: { expires: RollOverlap; json: boolean }) => {
      const rolled = await ctx.withDatabase(ctx.config(), (db) =>
        rollKey(db, OPERATOR, id, opts.expires),
      );
      if (!rolled) throw new CommandError(`no active key with id ${id}`, 'not_found');
      if (opts.json) {
        return ctx.printJson({
          id: rolled.record.id,
          replaces: rolled.old.id,
          old_key_expires_at: rolled.old.revokedAt?.toISOString() ?? null,
          api_key: rolled.key,
        });
      }
      ctx.print(
        `Rolled ${id} into ${rolled.record.id}; ${id} stops working at ${rolled.old.revokedAt?.toISOString()}.`,
      );
      ctx.print(`API key (shown once; store it now): ${rolled.key}`);
    });

  key
    .command('list')
    .description('list keys (prefix and last four characters only)')
    .option('--partner <name>', 'only this partner')
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner?: string; json: boolean }) => {
      const keys = await ctx.withDatabase(ctx.config(), async (db) => {
        const partnerId = opts.partner ? (await partnerNamed(db, opts.partner)).id : undefined;
        return createApiKeysRepo(db).list(partnerId);
      });
      const rows = keys.map((k) => ({
        id: k.id,
        partner: k.partnerName,
        environment: k.environment,
        key: maskKey(k.prefix, k.last4),
        name: k.name,
        created_at: k.createdAt.toISOString(),
        revoked_at: k.revokedAt?.toISOString() ?? null,
        status: keyStatus(k),
        last_used_at: k.lastUsedAt?.toISOString() ?? null,
      }));
      if (opts.json) return ctx.printJson(rows);
      ctx.print(
        table([
          ['ID', 'PARTNER', 'ENV', 'KEY', 'STATUS', 'NAME'],
          ...rows.map((r) => [r.id, r.partner, r.environment, r.key, r.status, r.name ?? '']),
        ]),
      );
    });
}
