/**
 * `yield-service embed show|origins`: the embed settings of a partner environment — its public
 * embed id and the parent origins allowed to frame the embed (sent as CSP frame-ancestors).
 */
import { type Command, InvalidArgumentError } from 'commander';
import {
  createEmbedSettingsRepo,
  type EmbedSettings,
  normaliseOrigin,
  TooManyOriginsError,
} from '../db/embed-settings.ts';
import { OPERATOR } from '../operations/actor.ts';
import { changeEmbedOrigins, type OriginChange } from '../operations/embed-origins.ts';
import { type Environment, environment, partnerNamed } from './arguments.ts';
import { type CommandContext, CommandError } from './shared.ts';

function origin(raw: string, previous: string[] = []): string[] {
  const r = normaliseOrigin(raw);
  if ('error' in r) throw new InvalidArgumentError(r.error);
  return [...previous, r.origin];
}

const asJson = (s: EmbedSettings) => ({
  partner: s.partnerName,
  environment: s.environment,
  embed_id: s.embedId,
  allowed_origins: s.allowedOrigins,
  updated_at: s.updatedAt,
});

function printSettings(ctx: CommandContext, s: EmbedSettings, json: boolean) {
  if (json) return ctx.printJson(asJson(s));
  ctx.print(`Embed of ${s.partnerName} (${s.environment}): ${s.embedId}`);
  ctx.print(
    s.allowedOrigins.length === 0
      ? 'Allowed origins: none (no page may frame the embed)'
      : `Allowed origins:\n${s.allowedOrigins.map((o) => `  ${o}`).join('\n')}`,
  );
}

async function change(
  ctx: CommandContext,
  opts: { partner: string; env: Environment; json: boolean },
  change?: { kind: OriginChange; origins: readonly string[] },
) {
  const settings = await ctx.withDatabase(ctx.config(), async (db) => {
    const partner = await partnerNamed(db, opts.partner);
    let found: EmbedSettings | undefined;
    try {
      found = change
        ? await changeEmbedOrigins(db, OPERATOR, {
            partnerId: partner.id,
            environment: opts.env,
            change: change.kind,
            origins: change.origins,
          })
        : await createEmbedSettingsRepo(db).get(partner.id, opts.env);
    } catch (err) {
      if (err instanceof TooManyOriginsError) throw new CommandError(err.message);
      throw err;
    }
    if (!found) throw new CommandError('this partner environment has no embed settings');
    return found;
  });
  printSettings(ctx, settings, opts.json);
}

export function registerEmbedCommand(program: Command, ctx: CommandContext): void {
  const embed = program.command('embed').description('embed settings of a partner environment');
  const target = (c: Command) =>
    c
      .requiredOption('--partner <name>', 'partner name')
      .requiredOption('--env <env>', 'live or test', environment)
      .option('--json', 'print JSON', false);

  target(embed.command('show'))
    .description('print the public embed id and the allowed parent origins')
    .action((opts) => change(ctx, opts));

  const origins = embed.command('origins').description('parent origins allowed to frame the embed');
  target(origins.command('add'))
    .description('allow a parent origin (repeat --origin for several)')
    .requiredOption('--origin <origin>', 'https://host[:port] (http:// for loopback only)', origin)
    .action((opts: { partner: string; env: Environment; json: boolean; origin: string[] }) =>
      change(ctx, opts, { kind: 'add', origins: opts.origin }),
    );
  target(origins.command('remove'))
    .description('stop allowing a parent origin')
    .requiredOption('--origin <origin>', 'https://host[:port] (http:// for loopback only)', origin)
    .action((opts: { partner: string; env: Environment; json: boolean; origin: string[] }) =>
      change(ctx, opts, { kind: 'remove', origins: opts.origin }),
    );
  target(origins.command('set'))
    .description('replace the allowed parent origins (no --origin: none)')
    .option('--origin <origin>', 'https://host[:port] (http:// for loopback only)', origin)
    .action((opts: { partner: string; env: Environment; json: boolean; origin?: string[] }) =>
      change(ctx, opts, { kind: 'set', origins: opts.origin ?? [] }),
    );
}
