/**
 * Changes to what the portal's webhook pages show: destinations, deliveries and their attempts,
 * inbound events and secrets, lifecycle events. The triggers of migration 0029 notify on one
 * channel after every statement that changed a row of those tables, whoever ran it.
 */
import type { Database } from './client.ts';

const CHANNEL = 'webhook_changes';

/**
 * Calls `onChange` after each committed change, before the writing call returns (PGlite, whose
 * every writer runs in this process). Resolves to a function that stops listening; to undefined
 * where the engine cannot promise that (PostgreSQL).
 */
export async function onWebhookChange(
  db: Database,
  onChange: () => void,
): Promise<(() => Promise<void>) | undefined> {
  return db.listen ? db.listen(CHANNEL, onChange) : undefined;
}
