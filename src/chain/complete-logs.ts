/**
 * Logs that a provider cannot silently drop. Behind one URL, a provider answers from several nodes
 * that are not at the same height, and `eth_getLogs` over a range past a node's head returns the logs
 * that node has, without an error. A read here counts as complete only when it agrees with the
 * range's block headers:
 *
 * - Every header of [from, to] is read (a node behind a block answers none: MissingBlockError) and
 *   each must name the one before it as parent: the range is one piece of one chain.
 * - Every returned log must sit in the block whose header was read (same hash): a node on another
 *   fork is caught here (ChainMovedError).
 * - Every block whose logs bloom may hold a matching log, but for which the range answer held none,
 *   is asked again by block hash (EIP-234). A node that lacks the block answers that with an error,
 *   not with nothing, so a lagging node can delay the read but never empty it. A bloom's false
 *   positive costs one such call.
 *
 * So a missing log would need a node that has the block (its hash answered) and still leaves its
 * log out of a by-hash answer: not the failure providers have.
 */

import type { Hex } from 'viem';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import { getHeaderRange, type Header } from './block-headers.ts';
import { bloomFilter } from './bloom.ts';
import type { ChainClient } from './client.ts';
import { readLogRanges } from './log-ranges.ts';

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

/** Which logs: any of `addresses`, and at each topic position any of its topics (null: any). */
export interface LogFilter {
  addresses: readonly Hex[];
  topics: readonly (readonly Hex[] | null)[];
}

/** The chain changed under a read, or nodes disagree on a block: read the range again. */
export class ChainMovedError extends BaseError<'chain_moved'> {
  override name = 'ChainMovedError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('chain_moved', message, { ...options, retryable: true });
  }
}

export interface CompleteLogs {
  /** The filter's logs in [from, to], in chain order. */
  logs: RawLog[];
  /** Every header of [from, to]. */
  headers: Map<bigint, Header>;
  /** Blocks whose bloom matched with no log in the range answer, asked again by hash. */
  rechecked: number;
  /** Logs found only by those by-hash reads: what the range answer had left out. */
  recovered: number;
}

export interface CompleteLogsOptions {
  /** Split a refused range down to this many blocks (readLogRanges); without it, a refusal throws. */
  maxBlocks?: bigint;
  /** Where headers come from (a per-run cache); default: read them now. */
  headers?: (from: bigint, to: bigint) => Promise<Map<bigint, Header>>;
  /** Maps a range refusal to the caller's error (the indexer remembers a smaller span). */
  onRangeError?: (err: unknown, from: bigint, to: bigint) => unknown;
}

/**
 * The most blocks one complete read should span: its headers are held at once (a busy mainnet
 * block's header, with its transaction hashes, is about 10 KB), so callers cut longer spans.
 */
export const MAX_CHECKED_BLOCKS = 2_000n;

/** Attempts of one by-hash read: behind a load balancer each may reach another node. */
const BY_HASH_ATTEMPTS = 4;

const rpcFilter = (filter: LogFilter) => ({
  address: filter.addresses as Hex[],
  topics: filter.topics.map((t) => (t === null ? null : [...t])) as (Hex[] | null)[],
});

async function logsByRange(
  client: ChainClient,
  filter: LogFilter,
  from: bigint,
  to: bigint,
): Promise<RawLog[]> {
  return (await client.request({
    method: 'eth_getLogs',
    params: [
      {
        ...rpcFilter(filter),
        fromBlock: `0x${from.toString(16)}`,
        toBlock: `0x${to.toString(16)}`,
      },
    ],
  })) as unknown as RawLog[];
}

async function logsByHash(
  client: ChainClient,
  filter: LogFilter,
  blockHash: Hex,
): Promise<RawLog[]> {
  let last: unknown;
  for (let attempt = 0; attempt < BY_HASH_ATTEMPTS; attempt++) {
    try {
      return (await client.request({
        method: 'eth_getLogs',
        params: [{ ...rpcFilter(filter), blockHash }],
      })) as unknown as RawLog[];
    } catch (err) {
      last = err;
    }
  }
  throw new ChainMovedError(`logs of block ${blockHash} could not be read by hash`, {
    cause: last,
  });
}

/** Checks that headers [from, to] form one chain; returns the first break, if any. */
export function firstBrokenLink(
  headers: ReadonlyMap<bigint, Header>,
  from: bigint,
  to: bigint,
): bigint | undefined {
  for (let n = from + 1n; n <= to; n++) {
    if (headers.get(n)?.parentHash !== headers.get(n - 1n)?.hash) return n;
  }
  return undefined;
}

export async function readCompleteLogs(
  client: ChainClient,
  filter: LogFilter,
  from: bigint,
  to: bigint,
  options: CompleteLogsOptions = {},
): Promise<CompleteLogs> {
  const headersP = (options.headers ?? ((a, b) => getHeaderRange(client, a, b)))(from, to);
  const read = (a: bigint, b: bigint) => logsByRange(client, filter, a, b);
  const logsP = (
    options.maxBlocks !== undefined
      ? readLogRanges(from, to, options.maxBlocks, read)
      : read(from, to)
  ).catch((err: unknown) => {
    throw options.onRangeError ? options.onRangeError(err, from, to) : err;
  });
  // Both are awaited before either failure is thrown, so neither rejection goes unhandled.
  const [headersR, logsR] = await Promise.allSettled([headersP, logsP]);
  if (logsR.status === 'rejected') throw logsR.reason;
  if (headersR.status === 'rejected') throw headersR.reason;
  const headers = headersR.value;
  const broken = firstBrokenLink(headers, from, to);
  if (broken !== undefined) {
    throw new ChainMovedError(
      `block ${broken} does not follow block ${broken - 1n}: nodes disagree`,
    );
  }

  const logs = logsR.value.filter((l) => !l.removed);
  const withLogs = new Set<bigint>();
  for (const l of logs) {
    const n = BigInt(l.blockNumber);
    if (n < from || n > to) throw new ChainMovedError(`a log of block ${n} outside ${from}..${to}`);
    if (headers.get(n)?.hash !== l.blockHash) {
      throw new ChainMovedError(`block ${n} changed during range ${from}..${to}`);
    }
    withLogs.add(n);
  }

  const mayMatch = bloomFilter(filter);
  const suspects = [...headers.values()].filter(
    (h) => !withLogs.has(h.number) && (h.logsBloom === undefined || mayMatch(h.logsBloom)),
  );
  const found = await Promise.all(suspects.map((h) => logsByHash(client, filter, h.hash)));
  let recovered = 0;
  suspects.forEach((h, i) => {
    for (const l of found[i]!) {
      if (l.removed) continue;
      if (l.blockHash !== h.hash)
        throw new ChainMovedError(`block ${h.number} answered another hash`);
      logs.push(l);
      recovered++;
    }
  });
  if (recovered > 0) {
    logs.sort((a, b) => {
      const d = BigInt(a.blockNumber) - BigInt(b.blockNumber);
      return d !== 0n ? (d < 0n ? -1 : 1) : Number(BigInt(a.logIndex) - BigInt(b.logIndex));
    });
  }
  return { logs, headers, rechecked: suspects.length, recovered };
}
