/**
 * Block headers by number, fetched concurrently so viem's batching HTTP transport sends them as one
 * JSON-RPC batch: one round trip for every block a range needs (its timestamps and hashes).
 */
import { type Hex, numberToHex } from 'viem';
import type { ChainClient } from '../../chain/client.ts';

export interface Header {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  timestamp: number;
}

/** The chain no longer has a block it had a moment ago (a reorg or a rewound node). */
export class MissingBlockError extends Error {
  override name = 'MissingBlockError';
}

export async function getHeaders(
  client: ChainClient,
  numbers: readonly bigint[],
): Promise<Map<bigint, Header>> {
  const blocks = await Promise.all(
    numbers.map((n) =>
      client.request({ method: 'eth_getBlockByNumber', params: [numberToHex(n), false] }),
    ),
  );
  const out = new Map<bigint, Header>();
  blocks.forEach((b, i) => {
    if (!b?.hash) throw new MissingBlockError(`block ${numbers[i]} not found`);
    out.set(BigInt(b.number as Hex), {
      number: BigInt(b.number as Hex),
      hash: b.hash,
      parentHash: b.parentHash,
      timestamp: Number(b.timestamp),
    });
  });
  return out;
}

export async function getHeader(client: ChainClient, n: bigint): Promise<Header> {
  const h = (await getHeaders(client, [n])).get(n);
  if (!h) throw new MissingBlockError(`block ${n} not found`);
  return h;
}

/** The node's latest block number, uncached (viem's getBlockNumber caches for a polling interval). */
export async function headNumber(client: ChainClient): Promise<bigint> {
  return BigInt(await client.request({ method: 'eth_blockNumber' }));
}
