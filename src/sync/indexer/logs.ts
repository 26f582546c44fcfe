/**
 * The engine logs the indexer follows: one eth_getLogs over every engine address per block range,
 * checked complete against the range's headers (src/chain/complete-logs.ts). A range the provider
 * refuses becomes RangeRejectedError (src/chain/log-ranges.ts decides which errors mean "ask for a
 * smaller range").
 */
import { type Hex, toEventSelector } from 'viem';
import type { ChainClient } from '../../chain/client.ts';
import {
  type CompleteLogs,
  type LogFilter,
  type RawLog,
  readCompleteLogs,
} from '../../chain/complete-logs.ts';
import {
  errorMessages,
  isRangeRejection,
  RangeRejectedError,
  refusedCap,
} from '../../chain/log-ranges.ts';

export type { RawLog };

export const TOPICS = {
  deposit: toEventSelector('Deposit(address,address,uint256,uint256)'),
  withdraw: toEventSelector('Withdraw(address,address,address,uint256,uint256)'),
  redeemRequested: toEventSelector('RedeemRequested(address,address,uint256,address,uint256)'),
} as const;

export function engineLogFilter(addresses: readonly Hex[]): LogFilter {
  return { addresses, topics: [[TOPICS.deposit, TOPICS.withdraw, TOPICS.redeemRequested]] };
}

function rangeRejected(err: unknown, from: bigint, to: bigint): unknown {
  if (!isRangeRejection(err)) return err;
  const cap = refusedCap(err);
  return new RangeRejectedError(
    `eth_getLogs ${from}..${to} rejected: ${errorMessages(err)[0] ?? err}`,
    { cause: err, ...(cap !== undefined ? { maxBlocks: cap } : {}) },
  );
}

/**
 * Engine logs of the three followed events in [from, to] with every header of the range;
 * RangeRejectedError when the provider refuses the range.
 */
export function getEngineLogs(
  client: ChainClient,
  addresses: readonly Hex[],
  from: bigint,
  to: bigint,
): Promise<CompleteLogs> {
  return readCompleteLogs(client, engineLogFilter(addresses), from, to, {
    onRangeError: rangeRejected,
  });
}
