/**
 * Reading engine logs over JSON-RPC: one eth_getLogs over every engine address per block range, and a
 * classifier for the provider errors that mean "ask for a smaller range" (Ponder's getLogsRetryHelper
 * idea: providers cap block spans, result counts or response time, and say so only in the message).
 */
import { type Hex, numberToHex, toEventSelector } from 'viem';
import type { ChainClient } from '../../chain/client.ts';

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

/** The provider refused the range itself (too many results, span too wide, timed out). */
export class RangeRejectedError extends Error {
  override name = 'RangeRejectedError';
}

const RANGE_HINTS = [
  /too many (results|logs|blocks)/i,
  /more than \d+ (results|logs)/i,
  /(block )?range (is )?too (large|wide|big)/i,
  /exceed(s|ed)? (the )?(max|maximum|limit)/i,
  /block range/i,
  /limit exceeded/i,
  /response (size|is too)/i,
  /timed? ?out|timeout/i,
  /query returned more than/i,
  // The HTTP client's own cap on a response body (viem: 10 MiB): a smaller range answers smaller.
  /body exceeded the size limit/i,
];

/** Every message along the error's cause chain (viem wraps the provider's error). */
function messages(err: unknown): string[] {
  const out: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 8; depth++) {
    if (typeof e !== 'object') break;
    const o = e as {
      message?: unknown;
      details?: unknown;
      shortMessage?: unknown;
      cause?: unknown;
    };
    for (const m of [o.message, o.details, o.shortMessage]) if (typeof m === 'string') out.push(m);
    e = o.cause;
  }
  return out;
}

export function isRangeRejection(err: unknown): boolean {
  if (err instanceof RangeRejectedError) return true;
  const e = err as { code?: unknown; name?: unknown } | undefined;
  // -32005: the EIP-1474 "limit exceeded" code several providers use for log queries.
  if (
    e?.code === -32005 ||
    e?.name === 'TimeoutError' ||
    e?.name === 'LimitExceededRpcError' ||
    e?.name === 'ResponseBodyTooLargeError'
  ) {
    return true;
  }
  const all = messages(err).join('\n');
  // A connection failure is an outage, not a range problem: shrinking would not help.
  if (/fetch failed|ECONNREFUSED|ECONNRESET|socket hang up/i.test(all) && !/timeout/i.test(all)) {
    return false;
  }
  return RANGE_HINTS.some((re) => re.test(all));
}

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
        `eth_getLogs ${from}..${to} rejected: ${messages(err)[0] ?? err}`,
        {
          cause: err,
        },
      );
    }
    throw err;
  }
}
