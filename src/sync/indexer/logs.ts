/**
 * Reading engine logs over JSON-RPC: one eth_getLogs over every engine address per block range. A
 * range the provider refuses becomes RangeRejectedError (src/chain/log-ranges.ts decides which
 * errors mean "ask for a smaller range").
 */
import { type Hex, numberToHex, toEventSelector } from 'viem';
import type { ChainClient } from '../../chain/client.ts';
import { errorMessages, isRangeRejection, RangeRejectedError } from '../../chain/log-ranges.ts';

/** A log as eth_getLogs returns it (quantities still hex). */
export interface RawLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  removed?: boolean;
}

export const TOPICS = {
  deposit: toEventSelector('Deposit(address,address,uint256,uint256)'),
  withdraw: toEventSelector('Withdraw(address,address,address,uint256,uint256)'),
  redeemRequested: toEventSelector('RedeemRequested(address,address,uint256,address,uint256)'),
} as const;

/** Engine logs of the three followed events in [from, to]; RangeRejectedError when refused. */
export async function getEngineLogs(
  client: ChainClient,
  addresses: readonly Hex[],
  from: bigint,
  to: bigint,
): Promise<RawLog[]> {
  try {
    const logs = (await client.request({
      method: 'eth_getLogs',
      params: [
        {
          address: addresses as Hex[],
          topics: [[TOPICS.deposit, TOPICS.withdraw, TOPICS.redeemRequested]],
          fromBlock: numberToHex(from),
          toBlock: numberToHex(to),
        },
      ],
    })) as unknown as RawLog[];
    return logs;
  } catch (err) {
    if (isRangeRejection(err)) {
      throw new RangeRejectedError(
        `eth_getLogs ${from}..${to} rejected: ${errorMessages(err)[0] ?? err}`,
        {
          cause: err,
        },
      );
    }
    throw err;
  }
}
