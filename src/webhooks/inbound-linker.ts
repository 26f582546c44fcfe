/**
 * Links submitted transactions (inbound `deposit.submitted` / `redeem.submitted`) to the lifecycle
 * event their log produced. Both sides already link on write (the event insert trigger, the inbound
 * store); this sweep catches the one case they cannot see: on PostgreSQL, a submission and its
 * event committed at the same moment, each invisible to the other's transaction.
 */
import type { Queryable } from '../db/client.ts';
import { linkPendingInbound } from '../db/inbound-events.ts';
import type { Logger } from '../logger.ts';
import { createPeriodicJob, type Job } from '../worker/runner.ts';

export function createInboundLinker(options: { db: Queryable; logger: Logger }) {
  const tick = async (): Promise<void> => {
    await linkPendingInbound(options.db);
  };
  return {
    tick,
    job: (intervalMs = 5_000): Job =>
      createPeriodicJob({ name: 'inbound-linker', intervalMs, logger: options.logger, tick }),
  };
}
