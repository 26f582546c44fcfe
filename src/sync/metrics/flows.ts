/**
 * A day's flows into and out of an engine: the sums of its Deposit.assets and Withdraw.assets over
 * the day's blocks. (An async exit's assets leave at the claim, which emits Withdraw;
 * RedeemRequested moves none.) Read from the engine's own logs, not from the events table, so the
 * daily figures stay independent of the log indexer.
 */
import type { AbiEvent } from 'viem';
import type { ChainClient } from '../../chain/client.ts';
import { yieldEngineAbi } from '../../chain/generated/index.ts';
import { readLogRanges } from '../../chain/log-ranges.ts';
import type { DayFlows } from './compute.ts';

const depositEvent = yieldEngineAbi.find(
  (x): x is Extract<(typeof yieldEngineAbi)[number], { type: 'event'; name: 'Deposit' }> =>
    x.type === 'event' && x.name === 'Deposit',
)!;
const withdrawEvent = yieldEngineAbi.find(
  (x): x is Extract<(typeof yieldEngineAbi)[number], { type: 'event'; name: 'Withdraw' }> =>
    x.type === 'event' && x.name === 'Withdraw',
)!;

/** A day and its blocks (after, through]. */
export interface DaySpan {
  day: string;
  after: bigint;
  through: bigint;
}

/**
 * The flows of `engine` for each span. One eth_getLogs sweep over the whole span, in ranges of at
 * most `maxBlocks` (the chain's block range limit); a range the provider refuses is split until it
 * answers, as the indexer's are (src/chain/log-ranges.ts).
 */
export async function readDayFlows(
  client: ChainClient,
  params: { engine: `0x${string}`; spans: readonly DaySpan[]; maxBlocks: bigint },
): Promise<Map<string, DayFlows>> {
  const { engine, spans } = params;
  const result = new Map<string, DayFlows>();
  for (const s of spans) result.set(s.day, { deposits: 0n, withdrawals: 0n });
  if (spans.length === 0) return result;
  let from = spans[0]!.after + 1n;
  let to = spans[0]!.through;
  for (const s of spans) {
    if (s.after + 1n < from) from = s.after + 1n;
    if (s.through > to) to = s.through;
  }
  const events = [depositEvent, withdrawEvent] as const satisfies readonly AbiEvent[];
  const logs = await readLogRanges(
    from,
    to,
    params.maxBlocks > 0n ? params.maxBlocks : 1n,
    (a, b) => client.getLogs({ address: engine, events, fromBlock: a, toBlock: b, strict: true }),
  );
  for (const log of logs) {
    if (log.blockNumber === null) continue;
    const span = spans.find((s) => log.blockNumber! > s.after && log.blockNumber! <= s.through);
    if (!span) continue; // a day that already has its row
    const f = result.get(span.day)!;
    if (log.eventName === 'Deposit') f.deposits += log.args.assets;
    else f.withdrawals += log.args.assets;
  }
  return result;
}
