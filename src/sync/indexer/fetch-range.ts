/**
 * Reading one block range for the indexer: the headers that pin it, the engines' logs, the block
 * times and settlement reads the events need, and the events themselves rendered for COPY. Writes
 * nothing; the indexer commits what this returns.
 *
 * Order matters: the hash of the range's last block is read before the continuity check at the
 * cursor, so a reorg landing between the two reads changes a hash the next range checks.
 */
import type { Hex } from 'viem';
import type { ChainClient } from '../../chain/client.ts';
import { type PreparedEvents, prepareEvents } from '../../db/chain-events-copy.ts';
import type { Cursor } from '../../db/cursors.ts';
import type { Product } from '../../db/products.ts';
import { getHeader, getHeaders } from './blocks.ts';
import { buildEvents, readSettlementTimes } from './events.ts';
import { getEngineLogs } from './logs.ts';

/** The chain changed under a range (a log's block hash differs from its header's): retry it. */
export class ChainMovedError extends Error {
  override name = 'ChainMovedError';
}

export interface FetchedRange {
  kind: 'fetched';
  from: bigint;
  /** The cursor after this range: its last block and that block's hash. */
  next: Cursor;
  events: PreparedEvents;
  logs: number;
  rpcMs: number;
  buildMs: number;
}

/** The block at the cursor no longer has the stored hash: a reorg deeper than the depth. */
export interface ReorgFound {
  kind: 'reorg';
  chainHash: Hex;
}

export type FetchResult = FetchedRange | ReorgFound;

export interface RangeRequest {
  chainId: number;
  cursor: Cursor;
  to: bigint;
  /** Products by lowercase engine address. */
  engines: ReadonlyMap<string, Product>;
  /** Rows per COPY chunk. */
  insertChunk: number;
}

export async function fetchRange(
  client: ChainClient,
  { chainId, cursor, to, engines, insertChunk }: RangeRequest,
): Promise<FetchResult> {
  const from = cursor.blockNumber + 1n;
  const started = performance.now();
  const last = await getHeader(client, to);
  const atCursor = await getHeader(client, cursor.blockNumber);
  if (atCursor.hash !== cursor.blockHash) return { kind: 'reorg', chainHash: atCursor.hash };

  const logs = await getEngineLogs(client, [...engines.keys()] as Hex[], from, to);
  const numbers = [...new Set(logs.map((l) => BigInt(l.blockNumber)))].filter((n) => n !== to);
  const [headers, settlement] = await Promise.all([
    getHeaders(client, numbers),
    readSettlementTimes(client, logs),
  ]);
  headers.set(to, last);
  for (const l of logs) {
    if (headers.get(BigInt(l.blockNumber))?.hash !== l.blockHash) {
      throw new ChainMovedError(
        `block ${BigInt(l.blockNumber)} changed during range ${from}..${to}`,
      );
    }
  }
  const fetched = performance.now();
  const events = prepareEvents(
    buildEvents(logs, { chainId, engines, headers, settlement }),
    insertChunk,
  );
  return {
    kind: 'fetched',
    from,
    next: { blockNumber: to, blockHash: last.hash },
    events,
    logs: logs.length,
    rpcMs: Math.round(fetched - started),
    buildMs: Math.round(performance.now() - fetched),
  };
}
