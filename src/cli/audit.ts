/**
 * The partner's portal audit log for changes made from the operator's CLI: the same rows the portal
 * writes for its members' changes, by "operator", with no member and no client address, so a
 * partner's team sees every change to its keys, webhooks and embed whoever made it.
 */
import type { Config } from '../config.ts';
import type { Queryable } from '../db/client.ts';
import { type AuditAction, createPortalAuditRepo } from '../db/portal-audit.ts';
import type { Environment } from '../db/products.ts';
import { createWebhookDestinationsRepo } from '../db/webhook-destinations.ts';
import { lazySecretBox } from './webhook-support.ts';

export interface OperatorChange {
  partnerId: string;
  action: AuditAction;
  environment: Environment;
  target: string;
}

export function recordOperatorChange(db: Queryable, change: OperatorChange): Promise<void> {
  return createPortalAuditRepo(db).record({ ...change, memberId: null, actor: 'operator' });
}

/** A change to a webhook destination, in its partner's log: `${id} ${detail}`, as the portal. */
export async function recordDestinationChange(
  db: Queryable,
  config: Config,
  id: string,
  action: AuditAction,
  detail: string,
): Promise<void> {
  // Reading the destination decrypts nothing: the box is opened only if a secret is needed.
  const d = await createWebhookDestinationsRepo(db, lazySecretBox(config)).find(id);
  if (!d) return;
  await recordOperatorChange(db, {
    partnerId: d.partnerId,
    action,
    environment: d.environment,
    target: `${id} ${detail}`,
  });
}
