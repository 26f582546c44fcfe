/**
 * Gauges of the operator's transactions (chain_transactions), read from the database when
 * Prometheus scrapes, like collectors.ts: pending transactions and the age of the oldest per
 * chain, and the fees paid. Every worker reports the same figures; alert on max().
 */
import { Gauge } from 'prom-client';
import { type ChainTxTotals, createChainTransactionsRepo } from '../db/chain-transactions.ts';
import type { Queryable } from '../db/client.ts';
import { registry } from './metrics.ts';

const SCRAPE_QUERY_TIMEOUT_MS = 2000;

export function registerTransactionCollectors(db: Queryable): () => void {
  let snapshot: Promise<ChainTxTotals[] | undefined> | undefined;
  const read = () => {
    let timer: NodeJS.Timeout | undefined;
    snapshot ??= Promise.race([
      createChainTransactionsRepo(db).totals(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error('scrape query timed out')),
          SCRAPE_QUERY_TIMEOUT_MS,
        );
      }),
    ])
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(timer);
        setImmediate(() => {
          snapshot = undefined;
        });
      });
    return snapshot;
  };
  const names: string[] = [];
  const gauge = (name: string, help: string, pick: (t: ChainTxTotals) => number) => {
    names.push(name);
    new Gauge({
      name,
      help,
      labelNames: ['chain_id'] as const,
      registers: [registry],
      async collect() {
        const totals = await read();
        if (!totals) return;
        this.reset();
        for (const t of totals) this.set({ chain_id: String(t.chainId) }, pick(t));
      },
    });
  };
  gauge(
    'chain_transactions_pending',
    'Operator transactions sent and not yet mined (nor reverted or dropped), by chain id.',
    (t) => t.pending,
  );
  gauge(
    'chain_transaction_oldest_pending_age_seconds',
    'Seconds since the oldest pending operator transaction was first sent (0 when none), by chain id.',
    (t) => t.oldestPendingAgeSeconds,
  );
  gauge(
    'chain_transaction_fees_paid_ether',
    'Fees paid by every recorded operator transaction (mined or reverted), in ether, by chain id.',
    // Wei to ether as a float only here, for the graph; the database keeps exact wei.
    (t) => Number(t.feesPaid) / 1e18,
  );
  return () => {
    for (const name of names) registry.removeSingleMetric(name);
  };
}
