/** `yield-service partner create|list`. */
import { type Command, InvalidArgumentError } from 'commander';
import { createPartnersRepo } from '../db/partners.ts';
import { type CommandContext, CommandError, table } from './shared.ts';

function partnerName(raw: string): string {
  const name = raw.trim();
  if (name.length === 0 || name.length > 100) {
    throw new InvalidArgumentError('a name of 1 to 100 characters');
  }
  return name;
}

export function registerPartnerCommand(program: Command, ctx: CommandContext): void {
  const partner = program.command('partner').description('manage partners');

  partner
    .command('create')
    .description('create a partner (both its live and test environments); prints its id')
    .requiredOption('--name <name>', 'display name, unique', partnerName)
    .option('--json', 'print the partner as JSON', false)
    .action(async (opts: { name: string; json: boolean }) => {
      const config = ctx.config();
      const created = await ctx.withDatabase(config, async (db) => {
        const repo = createPartnersRepo(db);
        if (await repo.findByName(opts.name)) {
          throw new CommandError(`a partner named "${opts.name}" already exists`, 'exists');
        }
        return repo.create(opts.name);
      });
      if (opts.json) {
        ctx.printJson({ id: created.id, name: created.name, created_at: created.createdAt });
      } else ctx.print(created.id);
    });

  partner
    .command('list')
    .description('list partners')
    .option('--json', 'print JSON', false)
    .action(async (opts: { json: boolean }) => {
      const config = ctx.config();
      const partners = await ctx.withDatabase(config, (db) => createPartnersRepo(db).list());
      if (opts.json) {
        ctx.printJson(partners.map((p) => ({ id: p.id, name: p.name, created_at: p.createdAt })));
        return;
      }
      if (partners.length === 0) return ctx.print('No partners.');
      ctx.print(
        table([
          ['ID', 'NAME', 'CREATED'],
          ...partners.map((p) => [p.id, p.name, p.createdAt.toISOString()]),
        ]),
      );
    });
}
