/**
 * `yield-service tx list`: the operator's transactions (pause, resume, deprecate, fee changes),
 * pending ones first with their age and attempts, then the most recent; a reverted or dropped one
 * shows what to do. Read from the database only: it works while the service runs on PostgreSQL.
 */
import type { Command } from 'commander';
import { formatGwei } from 'viem';
import { type ChainTx, createChainTransactionsRepo } from '../db/chain-transactions.ts';
import { integerInRange } from './arguments.ts';
import { type CommandContext, table } from './shared.ts';

function age(t: ChainTx, now: Date): string {
  const s = Math.max(0, Math.round((now.getTime() - t.createdAt.getTime()) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

function json(t: ChainTx) {
  return {
    id: t.id,
    chain_id: t.chainId,
    sender: t.sender,
    nonce: t.nonce,
    purpose: t.purpose,
    status: t.status,
    tx_hash: t.minedTxHash ?? t.txHash,
    hashes: t.hashes,
    attempts: t.attempts,
    max_fee_per_gas: t.maxFeePerGas.toString(),
    max_priority_fee_per_gas: t.maxPriorityFeePerGas.toString(),
    block_number: t.blockNumber?.toString() ?? null,
    fee_paid_wei: t.feePaid?.toString() ?? null,
    error: t.error,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
  };
}

export function registerTxCommand(program: Command, ctx: CommandContext): void {
  const tx = program.command('tx').description("the operator's chain transactions");
  tx.command('list')
    .description('pending transactions (age, attempts, fees), then the most recent ones')
    .option('--chain-id <id>', 'only this chain', integerInRange(1, 2 ** 31 - 1))
    .option('--limit <n>', 'at most this many', integerInRange(1, 1000), 20)
    .option('--json', 'print JSON', false)
    .action(async (opts: { chainId?: number; limit: number; json: boolean }) => {
      const config = ctx.config();
      const rows = await ctx.withDatabase(config, (db) =>
        createChainTransactionsRepo(db).list({ chainId: opts.chainId, limit: opts.limit }),
      );
      if (opts.json) return ctx.printJson(rows.map(json));
      if (rows.length === 0) return ctx.print('No transactions.');
      const now = new Date();
      ctx.print(
        table([
          ['CHAIN', 'NONCE', 'STATUS', 'AGE', 'ATTEMPTS', 'MAX FEE (gwei)', 'HASH', 'PURPOSE'],
          ...rows.map((t) => [
            String(t.chainId),
            String(t.nonce),
            t.status,
            age(t, now),
            String(t.attempts),
            formatGwei(t.maxFeePerGas),
            t.minedTxHash ?? t.txHash,
            t.purpose,
          ]),
        ]),
      );
      for (const t of rows)
        if (t.error) ctx.print(`nonce ${t.nonce} (chain ${t.chainId}): ${t.error}`);
    });
}
