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
import { type Environment, environment, partnerNamed } from './arguments.ts';
import { recordOperatorChange } from './audit.ts';
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

/** A change of the origin list: the repository's statement (the portal calls the same ones). */
type Change = (
  repo: ReturnType<typeof createEmbedSettingsRepo>,
  partnerId: string,
  env: Environment,
) => Promise<EmbedSettings | undefined>;

async function change(
  ctx: CommandContext,
  opts: { partner: string; env: Environment; json: boolean },
  fn: Change | undefined,
) {
  const settings = await ctx.withDatabase(ctx.config(), async (db) => {
    const partner = await partnerNamed(db, opts.partner);
    const repo = createEmbedSettingsRepo(db);
    const current = await repo.get(partner.id, opts.env);
    if (!current) throw new CommandError('this partner environment has no embed settings');
    if (!fn) return current;
    let changed: EmbedSettings;
    try {
      changed = (await fn(repo, partner.id, opts.env))!;
    } catch (err) {
      if (err instanceof TooManyOriginsError) throw new CommandError(err.message);
      throw err;
    }
    // One audit row per origin allowed or removed, as the portal writes them.
    const was = new Set(current.allowedOrigins);
    const now = new Set(changed.allowedOrigins);
    const moves = [
      ...changed.allowedOrigins
        .filter((o) => !was.has(o))
        .map((o) => ({ action: 'embed.origin_added' as const, target: o })),
      ...current.allowedOrigins
        .filter((o) => !now.has(o))
        .map((o) => ({ action: 'embed.origin_removed' as const, target: o })),
    ];
    for (const m of moves) {
      await recordOperatorChange(db, { partnerId: partner.id, environment: opts.env, ...m });
    }
    return changed;
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
    .action((opts) => change(ctx, opts, undefined));

  const origins = embed.command('origins').description('parent origins allowed to frame the embed');
  target(origins.command('add'))
    .description('allow a parent origin (repeat --origin for several)')
    .requiredOption('--origin <origin>', 'https://host[:port] (http:// for loopback only)', origin)
    .action((opts: { partner: string; env: Environment; json: boolean; origin: string[] }) =>
      change(ctx, opts, (repo, id, env) => repo.addOrigins(id, env, opts.origin)),
    );
  target(origins.command('remove'))
    .description('stop allowing a parent origin')
    .requiredOption('--origin <origin>', 'https://host[:port] (http:// for loopback only)', origin)
    .action((opts: { partner: string; env: Environment; json: boolean; origin: string[] }) =>
      change(ctx, opts, (repo, id, env) => repo.removeOrigins(id, env, opts.origin)),
    );
  target(origins.command('set'))
    .description('replace the allowed parent origins (no --origin: none)')
    .option('--origin <origin>', 'https://host[:port] (http:// for loopback only)', origin)
    .action((opts: { partner: string; env: Environment; json: boolean; origin?: string[] }) =>
      change(ctx, opts, (repo, id, env) => repo.setOrigins(id, env, opts.origin ?? [])),
    );
}
