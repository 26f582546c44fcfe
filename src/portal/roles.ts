/**
 * What each role may do: the one table every portal action checks (and docs/portal.md shows).
 * Developers manage test keys only; live keys move real money, so they are for owners and admins.
 */
import type { MemberRole } from '../db/portal-members.ts';

export type Permission =
  | 'keys.view'
  | 'keys.manage.test'
  | 'keys.manage.live'
  | 'team.view'
  | 'team.manage'
  | 'team.manage.owners'
  | 'audit.view'
  | 'webhooks.manage.test'
  | 'webhooks.manage.live'
  | 'embed.manage.test'
  | 'embed.manage.live';

export const PERMISSIONS: Record<MemberRole, readonly Permission[]> = {
  owner: [
    'keys.view',
    'keys.manage.test',
    'keys.manage.live',
    'team.view',
    'team.manage',
    'team.manage.owners',
    'audit.view',
    'webhooks.manage.test',
    'webhooks.manage.live',
    'embed.manage.test',
    'embed.manage.live',
  ],
  admin: [
    'keys.view',
    'keys.manage.test',
    'keys.manage.live',
    'team.view',
    'team.manage',
    'audit.view',
    'webhooks.manage.test',
    'webhooks.manage.live',
    'embed.manage.test',
    'embed.manage.live',
  ],
  developer: [
    'keys.view',
    'keys.manage.test',
    'team.view',
    'webhooks.manage.test',
    'embed.manage.test',
  ],
  viewer: ['keys.view', 'team.view'],
};

export function can(role: MemberRole, permission: Permission): boolean {
  return PERMISSIONS[role].includes(permission);
}

/** Whether `actor` may invite a member with `role`, or remove one who has it. */
export function canManageRole(actor: MemberRole, role: MemberRole): boolean {
  return role === 'owner' ? can(actor, 'team.manage.owners') : can(actor, 'team.manage');
}
