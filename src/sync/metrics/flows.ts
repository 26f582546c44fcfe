/**
 * A day's flows into and out of an engine: the sums of its Deposit.assets and Withdraw.assets over
 * the day's blocks. (An async exit's assets leave at the claim, which emits Withdraw;
 * RedeemRequested moves none.) Read from the engines' own logs, not from the events table, so the
 * daily figures stay independent of the log indexer.
 *
 * The logs are read complete (src/chain/complete-logs.ts: checked against every header of the
 * range, so a provider node behind the range cannot drop a deposit from a day), once per run for
 * every engine of the chain: products that need the same days share one sweep and its headers.
 */
import { type Hex, toEventSelector } from 'viem';
import type { ChainClient } from '../../chain/client.ts';
import { MAX_CHECKED_BLOCKS, type RawLog, readCompleteLogs } from '../../chain/complete-logs.ts';
import { blockRanges } from '../../chain/log-ranges.ts';
import type { DayFlows } from './compute.ts';

const DEPOSIT = toEventSelector('Deposit(address,address,uint256,uint256)');
const WITHDRAW = toEventSelector('Withdraw(address,address,address,uint256,uint256)');

/** A day and its blocks (after, through]. */
export interface DaySpan {
  day: string;
  after: bigint;
  through: bigint;
}

export interface FlowReader {
  /** The flows of `engine` for each span. */
  read(engine: Hex, spans: readonly DaySpan[]): Promise<Map<string, DayFlows>>;
}

/**
 * A reader for one metrics run over `engines`. Each block range is swept once for all of them, in
 * pieces of at most `maxBlocks` (the chain's block range limit; a piece the provider refuses is
 * split until it answers), one piece at a time so only one piece's headers are held at once.
 */
export function createFlowReader(
  client: ChainClient,
  params: { engines: readonly Hex[]; maxBlocks: bigint },
): FlowReader {
  const maxBlocks = params.maxBlocks > 0n ? params.maxBlocks : 1n;
  // Pieces no wider than a complete read holds headers for at once.
  const piece = maxBlocks < MAX_CHECKED_BLOCKS ? maxBlocks : MAX_CHECKED_BLOCKS;
  const filter = { addresses: params.engines, topics: [[DEPOSIT, WITHDRAW]] };
  const sweeps = new Map<string, Promise<RawLog[]>>();

  async function sweep(from: bigint, to: bigint): Promise<RawLog[]> {
    const out: RawLog[] = [];
    for (const [a, b] of blockRanges(from, to, piece)) {
      const { logs } = await readCompleteLogs(client, filter, a, b, { maxBlocks });
      out.push(...logs);
    }
    return out;
  }

  function logsOf(from: bigint, to: bigint): Promise<RawLog[]> {
    const key = `${from}:${to}`;
    let p = sweeps.get(key);
    if (!p) {
      p = sweep(from, to);
      p.catch(() => sweeps.delete(key)); // a failed sweep is asked again, not remembered
      sweeps.set(key, p);
    }
    return p;
  }

  return {
    async read(engine, spans) {
      const result = new Map<string, DayFlows>();
      for (const s of spans) result.set(s.day, { deposits: 0n, withdrawals: 0n });
      if (spans.length === 0) return result;
      let from = spans[0]!.after + 1n;
      let to = spans[0]!.through;
      for (const s of spans) {
        if (s.after + 1n < from) from = s.after + 1n;
        if (s.through > to) to = s.through;
      }
      const address = engine.toLowerCase();
      for (const log of await logsOf(from, to)) {
        if (log.address.toLowerCase() !== address) continue;
        const block = BigInt(log.blockNumber);
        const span = spans.find((s) => block > s.after && block <= s.through);
        if (!span) continue; // a day that already has its row
        // Deposit(sender, owner | assets, shares); Withdraw(sender, receiver, owner | assets, shares)
        const assets = BigInt(log.data.slice(0, 66));
        const f = result.get(span.day)!;
        if (log.topics[0] === DEPOSIT) f.deposits += assets;
        else if (log.topics[0] === WITHDRAW) f.withdrawals += assets;
      }
      return result;
    },
  };
}
