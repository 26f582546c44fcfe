/**
 * `yield-service portal invite`: how a partner's first owner gets into the portal. Adds the member
 * (or finds them, when already on that partner's team) and prints a one-time sign-in URL, valid 15
 * minutes. The same functions serve the portal's own invitations (src/portal/sign-in-links.ts).
 */
import { type Command, InvalidArgumentError } from 'commander';
import {
  createPortalMembersRepo,
  isMemberRole,
  type MemberRole,
  normaliseEmail,
} from '../db/portal-members.ts';
import { OPERATOR } from '../operations/actor.ts';
import { inviteMember } from '../operations/team.ts';
import { portalPublicUrl } from '../portal/public-url.ts';
import { issueSignInUrl } from '../portal/sign-in-links.ts';
import { partnerNamed } from './arguments.ts';
import { type CommandContext, CommandError } from './shared.ts';

function role(raw: string): MemberRole {
  if (!isMemberRole(raw))
    throw new InvalidArgumentError('must be owner, admin, developer or viewer');
  return raw;
}

function email(raw: string): string {
  const e = normaliseEmail(raw);
  if (!e) throw new InvalidArgumentError('must be an email address');
  return e;
}

export function registerPortalCommand(program: Command, ctx: CommandContext): void {
  const portal = program.command('portal').description('the partner portal');

  portal
    .command('invite')
    .description(
      "add a member to a partner's portal team (or find them) and print a one-time sign-in URL",
    )
    .requiredOption('--partner <name>', 'partner name')
    .requiredOption('--email <email>', "the member's email", email)
    .option('--role <role>', 'owner, admin, developer or viewer', role, 'owner')
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner: string; email: string; role: MemberRole; json: boolean }) => {
      const config = ctx.config();
      const result = await ctx.withDatabase(config, async (db) => {
        const partner = await partnerNamed(db, opts.partner);
        const existing = await createPortalMembersRepo(db).findActiveByEmail(opts.email);
        if (existing && existing.partnerId !== partner.id) {
          throw new CommandError(
            `${opts.email} is already a member of another partner's team (${existing.partnerName})`,
            'conflict',
          );
        }
        const member =
          existing ??
          (await inviteMember(db, OPERATOR, {
            partnerId: partner.id,
            email: opts.email,
            role: opts.role,
          }));
        const url = await issueSignInUrl(db, portalPublicUrl(config), member.id);
        return { member, url, created: !existing };
      });
      if (opts.json) {
        return ctx.printJson({
          member_id: result.member.id,
          partner: result.member.partnerName,
          email: result.member.email,
          role: result.member.role,
          created: result.created,
          sign_in_url: result.url,
        });
      }
      ctx.print(
        result.created
          ? `Invited ${result.member.email} as ${result.member.role} of ${result.member.partnerName} (${result.member.id}).`
          : `${result.member.email} is already ${result.member.role} of ${result.member.partnerName}; here is a new link.`,
      );
      ctx.print(`One-time sign-in URL (works once, for 15 minutes): ${result.url}`);
    });
}
