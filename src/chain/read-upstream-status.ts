/**
 * Whether an engine's underlying (upstream) vault works normally, at a block. This is the one
 * definition of "upstream ok", used by the health endpoint (`underlying_ok`) and by the lifecycle
 * (the `upstream halted` pause reason is its negation). The spec defines `underlying_ok` as "the
 * underlying vault works normally (no upstream pause, accepting deposits)", so both halves count:
 * - `paused()` is true: the vault says it is paused. ERC-4626 has no pause switch, so `paused()`
 *   is optional: a vault without one (the call reverts or returns nothing) is never paused.
 * - `maxDeposit(engine) == 0`: the standard ERC-4626 signal that the vault accepts no deposit
 *   (paused, full, or closed), whatever switch it has.
 * Any other failure (RPC down, timeout) is thrown, never read as "not paused".
 */
import { type Address, parseAbi } from 'viem';
import { isRevertOrNoData } from './call-errors.ts';
import type { ChainClient } from './client.ts';

const upstreamAbi = parseAbi([
  'function paused() view returns (bool)',
  'function maxDeposit(address receiver) view returns (uint256)',
]);

export interface UpstreamStatus {
  /** `paused()`, false when the vault has no such function. */
  paused: boolean;
  maxDeposit: bigint;
  /** Not paused and accepting deposits. */
  ok: boolean;
}

export async function readUpstreamStatus(
  client: ChainClient,
  params: { vault: Address; engine: Address; blockNumber?: bigint },
): Promise<UpstreamStatus> {
  const { vault: address, engine, blockNumber } = params;
  const [paused, maxDeposit] = await Promise.all([
    client
      .readContract({ address, abi: upstreamAbi, functionName: 'paused', blockNumber })
      .catch((err: unknown) => {
        if (isRevertOrNoData(err)) return false;
        throw err;
      }),
    client.readContract({
      address,
      abi: upstreamAbi,
      functionName: 'maxDeposit',
      args: [engine],
      blockNumber,
    }),
  ]);
  return { paused, maxDeposit, ok: !paused && maxDeposit > 0n };
}
