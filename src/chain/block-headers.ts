/**
 * Block headers by number, fetched concurrently so viem's batching HTTP transport sends them as
 * JSON-RPC batches: one round trip for the blocks a range needs (their times, hashes and blooms).
 *
 * A header that a node does not have (it is behind the block, or the block was reorganised away) is
 * `MissingBlockError`: the caller waits and asks again, it never reads the gap as "no block".
 */

import { type Hex, numberToHex } from 'viem';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import type { ChainClient } from './client.ts';

export interface Header {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  timestamp: number;
  /** The block's 2048-bit logs bloom (src/chain/bloom.ts); absent only in hand-made test headers. */
  logsBloom?: Hex;
}

/** The chain no longer has a block it had a moment ago (a reorg or a node behind the block). */
export class MissingBlockError extends BaseError<'block_missing'> {
  override name = 'MissingBlockError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('block_missing', message, { ...options, retryable: true });
  }
}

/** Headers asked for in one go at most: a batch every provider accepts. */
const HEADERS_PER_BATCH = 500;

interface RpcBlock {
  number?: Hex;
  hash?: Hex | null;
  parentHash: Hex;
  timestamp: Hex;
  logsBloom?: Hex;
}

export async function getHeaders(
  client: ChainClient,
  numbers: readonly bigint[],
): Promise<Map<bigint, Header>> {
  const out = new Map<bigint, Header>();
  for (let i = 0; i < numbers.length; i += HEADERS_PER_BATCH) {
    const part = numbers.slice(i, i + HEADERS_PER_BATCH);
    const blocks = (await Promise.all(
      part.map((n) =>
        client.request({ method: 'eth_getBlockByNumber', params: [numberToHex(n), false] }),
      ),
    )) as unknown as (RpcBlock | null)[];
    blocks.forEach((b, j) => {
      const asked = part[j]!;
      if (!b?.hash) throw new MissingBlockError(`block ${asked} not found`);
      const number = BigInt(b.number as Hex);
      // A node answering another block than the one asked for is as good as no answer.
      if (number !== asked) throw new MissingBlockError(`asked for block ${asked}, got ${number}`);
      out.set(number, {
        number,
        hash: b.hash,
        parentHash: b.parentHash,
        timestamp: Number(b.timestamp),
        ...(b.logsBloom ? { logsBloom: b.logsBloom } : {}),
      });
    });
  }
  return out;
}

export async function getHeader(client: ChainClient, n: bigint): Promise<Header> {
  const h = (await getHeaders(client, [n])).get(n);
  if (!h) throw new MissingBlockError(`block ${n} not found`);
  return h;
}

/** Every header of [from, to]. */
export function getHeaderRange(
  client: ChainClient,
  from: bigint,
  to: bigint,
): Promise<Map<bigint, Header>> {
  const numbers: bigint[] = [];
  for (let n = from; n <= to; n++) numbers.push(n);
  return getHeaders(client, numbers);
}

/** The node's latest block number, uncached (viem's getBlockNumber caches for a polling interval). */
export async function headNumber(client: ChainClient): Promise<bigint> {
  return BigInt(await client.request({ method: 'eth_blockNumber' }));
}
