/**
 * Who may open a portal route, declared with the route and enforced in one place. Every route
 * states `config.requires` (or `portalPublic`): registering one that states neither fails at start,
 * so a new state-changing route cannot forget its check. The session hook calls `enforce` once the
 * member is known; handlers only decide what to show (`permits`), never whether to refuse.
 */
import type { FastifyRequest, RouteOptions } from 'fastify';
import type { Member, MemberRole } from '../db/portal-members.ts';
import type { Environment } from '../db/products.ts';
import { envParam, PortalError } from './context.ts';
import { can, type Permission } from './roles.ts';

/** Per environment: developers manage test keys, webhooks and embed settings, not live ones. */
const BY_ENVIRONMENT = ['keys.manage', 'webhooks.manage', 'embed.manage'] as const;
type ByEnvironment = (typeof BY_ENVIRONMENT)[number];

export type Requirement =
  /** Any signed-in member of the team (their own account, the pages every role sees). */
  'member' | 'keys.view' | 'team.view' | 'team.manage' | 'audit.view' | ByEnvironment;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the signed-in member must be allowed (access.ts); every non-public route says. */
    requires?: Requirement;
  }
}

const isByEnvironment = (r: Requirement): r is ByEnvironment =>
  (BY_ENVIRONMENT as readonly string[]).includes(r);

export function permits(role: MemberRole, requirement: Requirement, env?: Environment): boolean {
  if (requirement === 'member') return true;
  if (!isByEnvironment(requirement)) return can(role, requirement);
  // A route under /:env/ names the environment; one outside it (none yet) needs both.
  const envs: Environment[] = env ? [env] : ['live', 'test'];
  return envs.every((e) => can(role, `${requirement}.${e}` as Permission));
}

const WHAT: Record<Exclude<Requirement, 'member'>, (env: Environment) => string> = {
  'keys.view': (env) => `see ${env} keys`,
  'keys.manage': (env) => `create, roll or revoke ${env} keys`,
  'webhooks.manage': (env) => `change ${env} webhooks`,
  'embed.manage': (env) => `change the ${env} embed settings`,
  'team.view': () => 'see the team',
  'team.manage': () => 'invite or remove members',
  'audit.view': () => 'see the audit log',
};

/** The one refusal: what the role cannot do, and whom to ask. */
export function refusal(member: Member, requirement: Requirement, env: Environment): PortalError {
  const what = requirement === 'member' ? 'do this' : WHAT[requirement](env);
  return new PortalError(
    403,
    'Not allowed',
    `As ${member.role} you cannot ${what}. Ask an owner or admin of your team.`,
  );
}

/** Refuses, before the handler runs, a member whose role lacks what the route requires. */
export function enforce(request: FastifyRequest, member: Member): void {
  const requirement = request.routeOptions.config.requires;
  if (!requirement) throw new Error(`portal route ${request.routeOptions.url} declares no role`);
  const hasEnv = (request.params as { env?: string } | undefined)?.env !== undefined;
  // An unknown environment is a 404 whoever asks; then the role is checked for the one named.
  const env = hasEnv ? envParam(request) : undefined;
  if (!permits(member.role, requirement, env)) {
    throw refusal(member, requirement, env ?? 'live');
  }
}

/** For the onRoute hook: a route that states neither who may open it nor that it is public. */
export function undeclared(route: RouteOptions): string | undefined {
  const config = route.config as { requires?: Requirement; portalPublic?: boolean } | undefined;
  if (config?.requires || config?.portalPublic) return undefined;
  const method = Array.isArray(route.method) ? route.method.join(',') : route.method;
  return `${method} ${route.url}`;
}
