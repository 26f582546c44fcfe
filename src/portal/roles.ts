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

/**
 * Each role in a sentence, as the team page describes it (the invitation's role choices and the
 * table of roles). Written from PERMISSIONS above: change both together.
 */
export const ROLE_SUMMARY: Record<MemberRole, string> = {
  owner: 'Everything an admin may do, and invites or removes owners.',
  admin:
    'Manages keys, webhooks and embed settings in both environments, invites and removes members other than owners, and reads the audit log.',
  developer:
    'Manages test keys, test webhooks and test embed settings; sees live keys and the team.',
  viewer: 'Sees the keys and the team; changes nothing.',
};

export function can(role: MemberRole, permission: Permission): boolean {
  return PERMISSIONS[role].includes(permission);
}

/** Whether `actor` may invite a member with `role`, or remove one who has it. */
export function canManageRole(actor: MemberRole, role: MemberRole): boolean {
  return role === 'owner' ? can(actor, 'team.manage.owners') : can(actor, 'team.manage');
}
