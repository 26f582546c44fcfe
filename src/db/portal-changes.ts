/**
 * Changes to what the portal's pages show, as notifications from database triggers, after every
 * committed statement that changed a row, whoever ran it:
 * - `webhook_changes` (migration 0029): destinations, deliveries and their attempts, inbound events
 *   and secrets, lifecycle events: the webhook pages;
 * - `team_changes` (migration 0030): API keys and their last use, members, the audit log, the
 *   partner's name: the keys, team and audit pages.
 */
import type { Database } from './client.ts';

export type ChangeChannel = 'webhook_changes' | 'team_changes';

/**
 * Calls `onChange` after each committed change on `channel`, before the writing call returns
 * (PGlite, whose every writer runs in this process). Resolves to a function that stops listening;
 * to undefined where the engine cannot promise that (PostgreSQL).
 */
export async function onPortalChange(
  db: Database,
  channel: ChangeChannel,
  onChange: () => void,
): Promise<(() => Promise<void>) | undefined> {
  return db.listen ? db.listen(channel, onChange) : undefined;
}
