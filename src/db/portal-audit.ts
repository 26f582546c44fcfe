/** The portal's audit log: every change a member or the operator makes, with who, when, where. */
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';
import type { Environment } from './products.ts';

export type AuditAction =
  | 'member.signed_in'
  | 'member.signed_out_everywhere'
  | 'member.invited'
  | 'member.removed'
  | 'member.invite_resent'
  | 'member.invite_cancelled'
  | 'key.created'
  | 'key.rolled'
  | 'key.revoked'
  | 'passkey.registered'
  | 'passkey.removed'
  | 'webhook.added'
  | 'webhook.rotated'
  | 'webhook.removed'
  | 'webhook.updated'
  | 'webhook.disabled'
  | 'webhook.enabled'
  | 'webhook.pinged'
  | 'webhook.replayed'
  | 'inbound.secret_set'
  | 'embed.origin_added'
  | 'embed.origin_removed';

export interface AuditEntry {
  id: string;
  partnerId: string;
  memberId: string | null;
  actor: string;
  action: AuditAction;
  environment: Environment | null;
  target: string | null;
  ip: string | null;
  createdAt: Date;
}

export interface AuditFilter {
  actor?: string | undefined;
  action?: AuditAction | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** An entry's id: only older ones. */
  before?: string | undefined;
  limit?: number | undefined;
}

export interface NewAuditEntry {
  partnerId: string;
  /** null: the operator's CLI. */
  memberId: string | null;
  actor: string;
  action: AuditAction;
  environment?: Environment | null;
  target?: string | null;
  ip?: string | null;
}

interface Row {
  id: string;
  partner_id: string;
  member_id: string | null;
  actor: string;
  action: AuditAction;
  environment: Environment | null;
  target: string | null;
  ip: string | null;
  created_at: Date;
}

export function createPortalAuditRepo(db: Queryable) {
  return {
    async record(entry: NewAuditEntry): Promise<void> {
      await db.query(
        `INSERT INTO portal_audit_log (id, partner_id, member_id, actor, action, environment, target, ip)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          newId('aud'),
          entry.partnerId,
          entry.memberId,
          entry.actor,
          entry.action,
          entry.environment ?? null,
          entry.target ?? null,
          entry.ip ?? null,
        ],
      );
    },

    /**
     * Newest first, filtered by who (the actor: a member's email or "operator"), what (the
     * action) and when (`since` inclusive, `until` exclusive); `before` pages back: only entries
     * older, in this order, than the one it names.
     */
    async list(partnerId: string, filter: AuditFilter = {}): Promise<AuditEntry[]> {
      const { rows } = await db.query<Row>(
        `SELECT * FROM portal_audit_log
         WHERE partner_id = $1
           AND ($2::text IS NULL OR actor = $2)
           AND ($3::text IS NULL OR action = $3)
           AND ($4::timestamptz IS NULL OR created_at >= $4)
           AND ($5::timestamptz IS NULL OR created_at < $5)
           AND ($6::text IS NULL OR (created_at, id) <
                (SELECT created_at, id FROM portal_audit_log WHERE id = $6 AND partner_id = $1))
         ORDER BY created_at DESC, id DESC LIMIT $7`,
        [
          partnerId,
          filter.actor ?? null,
          filter.action ?? null,
          filter.since ?? null,
          filter.until ?? null,
          filter.before ?? null,
          filter.limit ?? 200,
        ],
      );
      return rows.map((r) => ({
        id: r.id,
        partnerId: r.partner_id,
        memberId: r.member_id,
        actor: r.actor,
        action: r.action,
        environment: r.environment,
        target: r.target,
        ip: r.ip,
        createdAt: r.created_at,
      }));
    },
  };
}

export type PortalAuditRepo = ReturnType<typeof createPortalAuditRepo>;
