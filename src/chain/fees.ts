/**
 * EIP-1559 fees for the operator's transactions: what the node suggests, never above the chain's
 * cap, and the bump of a replacement. Nodes accept a replacement at the same nonce only when both
 * fee fields rise by at least 10 % (geth's `txpool.pricebump`); 12.5 % leaves room for rounding
 * and for nodes configured a little stricter. All in wei, bigint.
 */
import type { ChainClient } from './client.ts';

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Per mille: +12.5 %. */
const BUMP_PER_MILLE = 1125n;
/** What a node requires of a replacement, per mille: +10 %. */
const NODE_MIN_BUMP_PER_MILLE = 1100n;

const ceilPerMille = (v: bigint, perMille: bigint) => (v * perMille + 999n) / 1000n;
const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

/** The node's suggestion now (base fee x 2 + tip, viem's estimate), capped. */
export async function suggestedFees(client: ChainClient, cap: bigint): Promise<Fees> {
  const s = await client.estimateFeesPerGas({ type: 'eip1559' });
  return capped(
    { maxFeePerGas: s.maxFeePerGas, maxPriorityFeePerGas: s.maxPriorityFeePerGas },
    cap,
  );
}

export function capped(f: Fees, cap: bigint): Fees {
  const maxFeePerGas = min(f.maxFeePerGas, cap);
  return { maxFeePerGas, maxPriorityFeePerGas: min(f.maxPriorityFeePerGas, maxFeePerGas) };
}

/**
 * The fees of a replacement for a transaction sent with `previous`: +12.5 % on both fields, or
 * the node's current suggestion when higher, capped. Undefined when the cap leaves no room for the
 * +10 % a node requires: the transaction waits at its fees (the caller logs it as stuck at the cap).
 */
export function bumpedFees(previous: Fees, suggested: Fees, cap: bigint): Fees | undefined {
  const next = capped(
    {
      maxFeePerGas: max(
        ceilPerMille(previous.maxFeePerGas, BUMP_PER_MILLE),
        suggested.maxFeePerGas,
      ),
      maxPriorityFeePerGas: max(
        ceilPerMille(previous.maxPriorityFeePerGas, BUMP_PER_MILLE),
        suggested.maxPriorityFeePerGas,
      ),
    },
    cap,
  );
  const enough =
    next.maxFeePerGas >= ceilPerMille(previous.maxFeePerGas, NODE_MIN_BUMP_PER_MILLE) &&
    next.maxPriorityFeePerGas >=
      ceilPerMille(previous.maxPriorityFeePerGas, NODE_MIN_BUMP_PER_MILLE);
  return enough ? next : undefined;
}
