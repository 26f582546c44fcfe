/**
 * The newest block the service treats as final on a chain: `confirmationDepth` blocks under the
 * head, or the block the node's `finalized` / `safe` tag names. Everything that must not follow an
 * orphaned block (indexed events, daily rows, activations, status changes) reads at or below it.
 */
import type { Hex } from 'viem';
import { MissingBlockError } from './block-headers.ts';
import type { ChainSettings } from './chains.ts';
import type { ChainClient } from './client.ts';

/** The final block for `head` (never above it); negative when the chain is shorter than the depth. */
export async function confirmedBlock(
  client: ChainClient,
  chain: Pick<ChainSettings, 'confirmationDepth' | 'finalityTag'>,
  head: bigint,
): Promise<bigint> {
  if (!chain.finalityTag) return head - BigInt(chain.confirmationDepth);
  const block = (await client.request({
    method: 'eth_getBlockByNumber',
    params: [chain.finalityTag, false],
  })) as { number?: Hex } | null;
  if (!block?.number) {
    throw new MissingBlockError(
      `the node has no '${chain.finalityTag}' block (is it a post-merge chain?)`,
    );
  }
  const tagged = BigInt(block.number);
  // Another node behind the same URL may have answered the head: never past the head seen.
  return tagged < head ? tagged : head;
}
