/**
 * How an engine's holders can exit, at a block: whether exits are asynchronous (requested, then
 * claimed once the underlying ERC-7540 vault settles them), and whether the underlying limits
 * synchronous exits (ERC-4626 `maxWithdraw(engine)` below what the engine holds there, e.g. a vault
 * that halted withdrawals or lacks liquidity). The engine's own `maxWithdraw`/`maxRedeem` are bounded
 * by the same `exitLiquidity()`, so what a holder is promised never reverts.
 * An engine deployed before these views existed reads as synchronous and not limited.
 */
import type { Address } from 'viem';
import { isRevertOrNoData } from './call-errors.ts';
import type { ChainClient } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export interface ExitStatus {
  /** Exits go through requestRedeem / claimRedeem (an asynchronous underlying). */
  async: boolean;
  /** Assets the engine can pay out at once: idle + what the underlying lets it withdraw. */
  liquidity: bigint;
  /** Idle + value of the underlying shares held (open redeem requests excluded). */
  activeAssets: bigint;
  /** A synchronous engine whose underlying lets out less than the engine holds there. */
  limited: boolean;
}

export async function readExitStatus(
  client: ChainClient,
  params: { engine: Address; blockNumber?: bigint },
): Promise<ExitStatus> {
  const { engine: address, blockNumber } = params;
  try {
    const [isAsync, liquidity, activeAssets] = await Promise.all([
      client.readContract({ address, abi: yieldEngineAbi, functionName: 'isAsync', blockNumber }),
      client.readContract({
        address,
        abi: yieldEngineAbi,
        functionName: 'exitLiquidity',
        blockNumber,
      }),
      client.readContract({
        address,
        abi: yieldEngineAbi,
        functionName: 'activeAssets',
        blockNumber,
      }),
    ]);
    return {
      async: isAsync,
      liquidity,
      activeAssets,
      limited: !isAsync && liquidity < activeAssets,
    };
  } catch (err) {
    if (!isRevertOrNoData(err)) throw err;
    return { async: false, liquidity: 0n, activeAssets: 0n, limited: false };
  }
}
