/**
 * Who makes a change, and the audit row that says so. Every operation of operations/ writes its
 * change and this row in one transaction; the portal and the operator's CLI pass their actor and
 * never format a row of their own, so the same change reads the same whoever made it.
 */
import type { Queryable } from '../db/client.ts';
import { type AuditAction, createPortalAuditRepo } from '../db/portal-audit.ts';
import type { Environment } from '../db/products.ts';

export type Actor =
  /** A member of the partner's team, signed in to the portal from `ip`. */
  | { kind: 'member'; id: string; email: string; ip: string | null }
  /** The service's operator, through the CLI: no member, no client address. */
  | { kind: 'operator' }
  /** The demo's provisioning (DEMO=true, a fresh database): the rows a demo partner starts with. */
  | { kind: 'demo' };

export const OPERATOR: Actor = { kind: 'operator' };
export const DEMO: Actor = { kind: 'demo' };

export interface Change {
  partnerId: string;
  action: AuditAction;
  environment?: Environment | null;
  target: string;
}

/** The member id a created record names as its author (null: the operator or the demo). */
export const authorOf = (actor: Actor): string | null =>
  actor.kind === 'member' ? actor.id : null;

export function recordChange(tx: Queryable, actor: Actor, change: Change): Promise<void> {
  return createPortalAuditRepo(tx).record({
    partnerId: change.partnerId,
    action: change.action,
    environment: change.environment ?? null,
    target: change.target,
    memberId: authorOf(actor),
    actor: actor.kind === 'member' ? actor.email : actor.kind,
    ip: actor.kind === 'member' ? actor.ip : null,
  });
}
