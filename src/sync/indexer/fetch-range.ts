/**
 * Reading one block range for the indexer: the headers that pin it, the engines' logs (complete
 * against those headers: src/chain/complete-logs.ts), the settlement reads the events need, and the
 * events themselves rendered for COPY. Writes nothing; the indexer commits what this returns.
 *
 * Continuity: the range's first header must name the cursor's block as its parent, and the headers
 * chain up to the range's end, whose hash becomes the next cursor. A first header that does not
 * follow the cursor is a reorg when the cursor's block changed, and a node on another fork when not.
 */
import type { Hex } from 'viem';
import { getHeader, MissingBlockError } from '../../chain/block-headers.ts';
import type { ChainClient } from '../../chain/client.ts';
import { ChainMovedError } from '../../chain/complete-logs.ts';
import { type PreparedEvents, prepareEvents } from '../../db/chain-events-copy.ts';
import type { Cursor } from '../../db/cursors.ts';
import type { Product } from '../../db/products.ts';
import { buildEvents, readSettlementTimes } from './events.ts';
import { getEngineLogs } from './logs.ts';

export { ChainMovedError };

export interface FetchedRange {
  kind: 'fetched';
  from: bigint;
  /** The cursor after this range: its last block and that block's hash. */
  next: Cursor;
  events: PreparedEvents;
  logs: number;
  /** Logs the range answer had left out, found by block hash (a lagging node answered it). */
  recovered: number;
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
  let complete: Awaited<ReturnType<typeof getEngineLogs>>;
  try {
    complete = await getEngineLogs(client, [...engines.keys()] as Hex[], from, to);
  } catch (err) {
    // A node without one of the range's blocks (behind it, or it was just reorganised away).
    if (err instanceof MissingBlockError) throw new ChainMovedError(err.message, { cause: err });
    throw err;
  }
  const { logs, headers } = complete;
  if (headers.get(from)?.parentHash !== cursor.blockHash) {
    const atCursor = await getHeader(client, cursor.blockNumber);
    if (atCursor.hash !== cursor.blockHash) return { kind: 'reorg', chainHash: atCursor.hash };
    throw new ChainMovedError(
      `block ${from} does not follow the cursor's block ${cursor.blockNumber}`,
    );
  }
  const settlement = await readSettlementTimes(client, logs);
  const fetched = performance.now();
  const events = prepareEvents(
    buildEvents(logs, { chainId, engines, headers, settlement }),
    insertChunk,
  );
  return {
    kind: 'fetched',
    from,
    next: { blockNumber: to, blockHash: headers.get(to)!.hash },
    events,
    logs: logs.length,
    recovered: complete.recovered,
    rpcMs: Math.round(fetched - started),
    buildMs: Math.round(performance.now() - fetched),
  };
}
