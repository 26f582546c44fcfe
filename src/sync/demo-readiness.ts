/**
 * When the demo is ready to show data (issue #30): the demo's credentials appear as soon as its
 * products exist, but apy-history, fee-stats and yield-calc answer from the daily rows the metrics
 * processor computes from the 200-day chain afterwards (seconds; minutes on a busy machine). The
 * demo is ready once every demo product deployed before today has its row for yesterday (UTC),
 * the last closed day; a product deployed today (the demo's `launch`) has no closed day yet and
 * does not hold it back. Read from the database, so any process (an API apart from the worker
 * too) tells the same.
 */
import type { Queryable } from '../db/client.ts';
import type { Logger } from '../logger.ts';

export type DemoState = 'off' | 'computing_history' | 'ready';

export interface DemoHistory {
  ready: boolean;
  /** The last day every such product has a row for (null: some have none yet). */
  through: string | null;
  /** Products still missing yesterday's row. */
  missing: number;
}

const day = (d: Date) => d.toISOString().slice(0, 10);

export async function demoHistory(
  db: Queryable,
  chainId: number,
  now: Date = new Date(),
): Promise<DemoHistory> {
  const todayStart = new Date(`${day(now)}T00:00:00Z`);
  const yesterday = day(new Date(todayStart.getTime() - 86_400_000));
  const { rows } = await db.query<{ latest: string | Date | null }>(
    `SELECT max(s.date) AS latest
       FROM products p LEFT JOIN daily_snapshots s ON s.product_id = p.id
      WHERE p.chain_id = $1 AND p.engine_address IS NOT NULL AND p.deployed_at < $2
      GROUP BY p.id`,
    [chainId, todayStart],
  );
  const latest = rows.map((r) =>
    r.latest === null ? null : typeof r.latest === 'string' ? r.latest.slice(0, 10) : day(r.latest),
  );
  const missing = latest.filter((d) => d === null || d < yesterday).length;
  const known = latest.filter((d): d is string => d !== null).sort();
  return {
    ready: rows.length > 0 && missing === 0,
    through: latest.includes(null) ? null : (known[0] ?? null),
    missing,
  };
}

/**
 * Polls demoHistory until the demo is ready (or `signal` aborts); resolves with the last day
 * computed. A failed read (storage restarting) is tried again at the next poll.
 */
export async function waitForDemoHistory(options: {
  db: Queryable;
  chainId: number;
  logger: Logger;
  signal: AbortSignal;
  pollMs?: number;
}): Promise<string | undefined> {
  const pollMs = options.pollMs ?? 2_000;
  while (!options.signal.aborted) {
    try {
      const h = await demoHistory(options.db, options.chainId);
      if (h.ready) return h.through ?? undefined;
    } catch (err) {
      options.logger.debug({ err }, 'demo history not readable yet');
    }
    await new Promise<void>((resolve) => {
      // The listener goes with its timer: one per poll would pile up on the long-lived signal.
      const done = () => {
        clearTimeout(timer);
        options.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      options.signal.addEventListener('abort', done, { once: true });
    });
  }
  return undefined;
}
