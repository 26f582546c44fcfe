/**
 * The keeper of pooled-id engines (docs/engine.md, "Every request paid its own settlement"). On an
 * underlying that files every request under one id (the ERC-7540 reference pattern), the engine
 * learns of an upstream fulfilment only when it is called: each call redeems what was made
 * claimable and records a checkpoint at that fulfilment's price. Two fulfilments at different
 * prices with no engine call between them would be seen as one, at their average. So each
 * lifecycle round, for every deployed async engine whose `requestIdScheme()` is pooled (2), the
 * keeper compares what the underlying lets the engine redeem (`maxRedeem(engine)`) with the
 * engine's pending shares, and when some are claimable sends `settleRequests()` through the
 * operator's signer (tx-sender.ts: recorded before broadcast, replaced when stuck, followed by
 * the signer watch). One such transaction per engine is in flight at a time.
 *
 * Reads are at the latest block: a fulfilment the engine misses by a reorg is settled at the next
 * round, and settling early is harmless (the checkpoint is what the engine actually received).
 */
import { type Address, encodeFunctionData, erc4626Abi } from 'viem';
import type { ChainSettings } from '../../chain/chains.ts';
import type { ChainClient } from '../../chain/client.ts';
import { yieldEngineAbi } from '../../chain/generated/YieldEngine.ts';
import { chainErrorMessage } from '../../chain/send-engine-call.ts';
import type { createTxSender } from '../../chain/tx-sender.ts';
import { createChainTransactionsRepo } from '../../db/chain-transactions.ts';
import type { Queryable } from '../../db/client.ts';
import type { ProductsRepo } from '../../db/products.ts';
import type { Logger } from '../../logger.ts';

const SCHEME_POOLED = 2;
const SETTLE_DATA = encodeFunctionData({ abi: yieldEngineAbi, functionName: 'settleRequests' });

export interface RequestKeeperDeps {
  db: Queryable;
  chain: ChainSettings;
  client: ChainClient;
  products: ProductsRepo;
  /** The operator's sender; without one (no signer configured) the keeper does nothing. */
  sender: ReturnType<typeof createTxSender> | undefined;
  log: Logger;
}

export function createRequestKeeper(deps: RequestKeeperDeps) {
  const { chain, client, log, sender } = deps;
  const txs = createChainTransactionsRepo(deps.db);
  /** Engines known not to be pooled: the scheme, once learnt, never changes. */
  const notPooled = new Set<string>();

  async function claimableUpstream(engine: Address): Promise<bigint> {
    const scheme = await client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'requestIdScheme',
    });
    if (scheme === 0) return 0n; // no request yet: nothing to settle
    if (scheme !== SCHEME_POOLED) {
      notPooled.add(engine);
      return 0n;
    }
    const [underlying, pending] = await Promise.all([
      client.readContract({ address: engine, abi: yieldEngineAbi, functionName: 'underlying' }),
      client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'pendingUnderlyingShares',
      }),
    ]);
    const redeemable = await client.readContract({
      address: underlying,
      abi: erc4626Abi,
      functionName: 'maxRedeem',
      args: [engine],
    });
    return redeemable < pending ? redeemable : pending;
  }

  /** One round: returns the engines a `settleRequests()` was sent to. */
  async function round(): Promise<Address[]> {
    if (!sender) return [];
    const engines = (await deps.products.listDeployedOnChain(chain.chainId))
      .filter((p) => p.vaultKind === 'async' && p.engineAddress)
      .map((p) => p.engineAddress as Address)
      .filter((e) => !notPooled.has(e));
    if (engines.length === 0) return [];
    const inFlight = new Set(
      (await txs.pending(chain.chainId))
        .filter((t) => t.data === SETTLE_DATA)
        .map((t) => t.to?.toLowerCase()),
    );
    const sent: Address[] = [];
    for (const engine of engines) {
      if (inFlight.has(engine.toLowerCase())) continue;
      try {
        const claimable = await claimableUpstream(engine);
        if (claimable === 0n) continue;
        await sender.send({
          to: engine,
          data: SETTLE_DATA,
          purpose: `settleRequests() on ${engine}: ${claimable} underlying shares claimable upstream`,
        });
        sent.push(engine);
      } catch (err) {
        // One engine's failure (a read, a refused estimate) must not stop the others'.
        log.warn({ engine, err: chainErrorMessage(err) }, 'settling pooled requests failed');
      }
    }
    return sent;
  }

  return { round };
}
