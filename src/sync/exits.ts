/**
 * The exit follower of one chain, under the lease `exits:<chainId>`: follows every confirmed redeem
 * request of the chain's asynchronous engines to its end. Each round, at the confirmed block
 * (head − confirmationDepth, or the chain's finality tag):
 * 1. every `redeem.requested` event not followed yet gets a row (migration 0050) with the request's
 *    controller, owner and shares read from the engine (`redeemRequest(id)`);
 * 2. every open row is read again: a request the engine's ERC-7540 `claimableRedeemRequest` says is
 *    claimable stores `redeem.claimable` (its dedupe key makes it once per request, and the row moves
 *    to `claimable` in the same transaction); a claimed one is closed (`claimed`) and leaves the
 *    wallet's position. A request already claimed when first found claimable sends nothing.
 *
 * The assets due are the engine's own answer: `claimRedeem(id, controller)` run with `eth_call` from
 * the controller at that block, so the fee rule on the request's yield is applied by the contract,
 * not re-implemented here. Becoming claimable leaves no log of its own on an underlying that settles
 * by time (AsyncYieldVault), so the state is read, not indexed. A pooled-id underlying
 * (PooledAsyncVault) is claimable once its fulfilment covers the request, which the engine's view
 * already counts (claimRedeem settles first); nobody needs to call `settleRequests()` for the event.
 */
import { type Address, decodeFunctionResult, encodeFunctionData, getAddress, type Hex } from 'viem';
import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient } from '../chain/client.ts';
import { confirmedBlock } from '../chain/confirmed-head.ts';
import { yieldEngineAbi } from '../chain/generated/YieldEngine.ts';
import type { Database } from '../db/client.ts';
import { createEventsRepo } from '../db/events.ts';
import { createProductsRepo, type Product } from '../db/products.ts';
import { createRedeemRequestsRepo, type FollowedRequest } from '../db/redeem-requests.ts';
import type { Logger } from '../logger.ts';
import { formatUnits } from '../money/units.ts';
import { outboundPayload } from '../webhooks/event-catalogue.ts';
import { createLease, createLeasedJob } from '../worker/lease.ts';
import type { Job } from '../worker/runner.ts';
import { isoSeconds } from './indexer/events.ts';

export interface ExitFollowerOptions {
  db: Database;
  logger: Logger;
  chain: ChainSettings;
  client: ChainClient;
  holder: string;
  leaseTtlMs?: number;
}

export interface ExitRound {
  leased: boolean;
  followed: number;
  claimable: number;
  claimed: number;
}

export const claimableDedupeKey = (chainId: number, engine: string, requestId: bigint) =>
  `redeem.claimable:${chainId}:${engine.toLowerCase()}:${requestId}`;

export function createExitFollower(options: ExitFollowerOptions) {
  const { db, chain, client } = options;
  const chainId = chain.chainId;
  const log = options.logger.child({ job: `exits:${chainId}` });
  const lease = createLease({
    db,
    name: `exits:${chainId}`,
    holder: options.holder,
    ttlMs: options.leaseTtlMs ?? 30_000,
  });
  const requests = createRedeemRequestsRepo(db);
  const products = createProductsRepo(db);

  async function call(to: Address, data: Hex, blockNumber: bigint, from?: Address): Promise<Hex> {
    const { data: out } = await client.call({
      to,
      data,
      blockNumber,
      ...(from ? { account: from } : {}),
    });
    return out ?? '0x';
  }

  async function readRequest(engine: Address, id: bigint, blockNumber: bigint) {
    const data = await call(
      engine,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: 'redeemRequest', args: [id] }),
      blockNumber,
    );
    return decodeFunctionResult({ abi: yieldEngineAbi, functionName: 'redeemRequest', data }) as {
      controller: Address;
      owner: Address;
      shares: bigint;
      claimed: boolean;
    };
  }

  async function readUint(
    engine: Address,
    fn: 'claimableRedeemRequest' | 'claimableAt' | 'claimRedeem',
    args: readonly unknown[],
    blockNumber: bigint,
    from?: Address,
  ): Promise<bigint> {
    const data = await call(
      engine,
      encodeFunctionData({ abi: yieldEngineAbi, functionName: fn, args } as never),
      blockNumber,
      from,
    );
    return BigInt(data.slice(0, 66));
  }

  /** Step 1: rows for the new `redeem.requested` events. */
  async function followNew(byId: Map<string, Product>, block: bigint): Promise<number> {
    let n = 0;
    for (const e of await requests.unfollowed(chainId)) {
      const product = byId.get(e.productId);
      if (!product?.engineAddress) continue;
      const payload = JSON.parse(e.payload) as {
        request_id: Hex;
        estimated_settlement_at: string;
      };
      const id = BigInt(payload.request_id);
      const r = await readRequest(product.engineAddress, id, block);
      if (r.controller === '0x0000000000000000000000000000000000000000') continue; // not there yet
      await requests.add({
        productId: product.id,
        requestId: id,
        controller: getAddress(r.controller),
        owner: getAddress(r.owner),
        shares: r.shares,
        requestedEventId: e.eventId,
        requestedAt: e.occurredAt,
        estimatedClaimableAt: new Date(payload.estimated_settlement_at),
      });
      n++;
    }
    return n;
  }

  /** Step 2: one open request at `block`. */
  async function check(
    product: Product,
    row: FollowedRequest,
    block: bigint,
    blockTime: number,
  ): Promise<'claimable' | 'claimed' | undefined> {
    const engine = product.engineAddress!;
    const r = await readRequest(engine, row.requestId, block);
    if (r.claimed) {
      await requests.markClaimed(product.id, row.requestId);
      return 'claimed';
    }
    if (row.state === 'claimable') return undefined;
    const claimableShares = await readUint(
      engine,
      'claimableRedeemRequest',
      [row.requestId, row.controller],
      block,
    );
    if (claimableShares === 0n) return undefined;
    const [due, scheduled] = await Promise.all([
      readUint(engine, 'claimRedeem', [row.requestId, row.controller], block, row.controller)
        // A claim the engine would refuse now (an underlying paying short): no event yet.
        .catch(() => undefined),
      readUint(engine, 'claimableAt', [row.requestId], block),
    ]);
    if (due === undefined) return undefined;
    const at = scheduled > 0n && scheduled <= BigInt(blockTime) ? Number(scheduled) : blockTime;
    const claimableAt = isoSeconds(at);
    const data = encodeFunctionData({
      abi: yieldEngineAbi,
      functionName: 'claimRedeem',
      args: [row.requestId, row.controller],
    });
    const payload = outboundPayload('redeem.claimable', {
      slug: product.slug,
      chain_id: chainId,
      request_id: `0x${row.requestId.toString(16)}`,
      user_address: row.controller,
      shares: formatUnits(row.shares, product.shareDecimals ?? product.assetDecimals + 6),
      assets: formatUnits(due, product.assetDecimals),
      asset_symbol: product.assetSymbol,
      claimable_at: claimableAt,
      block_number: Number(block),
      claim: {
        to: getAddress(engine),
        function: 'claimRedeem(uint256,address)',
        receiver: row.controller,
        data,
      },
    });
    await db.transaction(async (tx) => {
      await lease.renewIn(tx);
      const stored = await createEventsRepo(tx).insert({
        partnerId: product.partnerId,
        environment: product.environment,
        productId: product.id,
        eventType: 'redeem.claimable',
        dedupeKey: claimableDedupeKey(chainId, engine, row.requestId),
        payload,
        occurredAt: new Date(at * 1000),
      });
      await createRedeemRequestsRepo(tx).markClaimable(
        product.id,
        row.requestId,
        new Date(at * 1000),
        stored?.id ?? null,
      );
    });
    log.info(
      { slug: product.slug, requestId: row.requestId.toString(), assets: payload.assets },
      'redeem request claimable: redeem.claimable stored',
    );
    return 'claimable';
  }

  async function round(): Promise<ExitRound> {
    const out: ExitRound = { leased: true, followed: 0, claimable: 0, claimed: 0 };
    // The database first: no RPC at all while the chain has nothing to follow.
    const deployed = (await products.listDeployedOnChain(chainId)).filter(
      (p) => p.vaultKind === 'async' && p.engineAddress,
    );
    if (deployed.length === 0) return out;
    const byId = new Map(deployed.map((p) => [p.id, p]));
    const fresh = await requests.unfollowed(chainId, 1);
    const pending = await requests.open([...byId.keys()]);
    if (fresh.length === 0 && pending.length === 0) return out;
    const head = await client.getBlockNumber({ cacheTime: 0 });
    const block = await confirmedBlock(client, chain, head);
    if (block < 0n) return out;
    out.followed = await followNew(byId, block);
    const open = await requests.open([...byId.keys()]);
    if (open.length === 0) return out;
    const { timestamp } = await client.getBlock({ blockNumber: block });
    for (const row of open) {
      const moved = await check(byId.get(row.productId)!, row, block, Number(timestamp));
      if (moved === 'claimable') out.claimable++;
      if (moved === 'claimed') out.claimed++;
    }
    return out;
  }

  async function runOnce(): Promise<ExitRound> {
    const ran = await lease.run(round);
    return ran?.value ?? { leased: false, followed: 0, claimable: 0, claimed: 0 };
  }

  return {
    runOnce,
    job(intervalMs: number): Job {
      return createLeasedJob({ lease, intervalMs, logger: options.logger, tick: runOnce });
    },
  };
}
