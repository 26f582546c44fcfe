/**
 * The product lifecycle worker, one per chain, under the lease `lifecycle:<chainId>` so that with
 * several workers exactly one moves the products of a chain.
 *
 * Each tick:
 * 1. Deploys `pending_deploy` products (not held) through the chain's deployer account. The
 *    deployment is signed locally and its hash and raw bytes are stored BEFORE it is broadcast, so
 *    a worker that restarts at any point resumes the same transaction (rebroadcasting it when the
 *    node never saw it) and never deploys a second engine. Nonces are assigned here, not by the
 *    node: read once per tick (see nextNonceFrom) and incremented locally, so N products started
 *    in one tick get N consecutive nonces. A recorded deployment is forgotten (and redone) only
 *    when the node does not know it, it has no receipt, and its nonce was taken by another
 *    transaction at a confirmed block (see resendOrForget). Once the receipt is
 *    `confirmationDepth` blocks deep, the product moves to `active` and its `product.deployed`
 *    event and a PROVISIONAL snapshot of the deployment day are stored in the same transaction
 *    (DECISIONS: latest_metrics is null only while pending_deploy; the first snapshot is written
 *    when the product becomes active). That row holds the chain state at the deployment block,
 *    no APY and no daily figures (src/sync/metrics/provisional.ts); the metrics processor
 *    replaces it with the real row when the day closes and backfills every day from
 *    `deployed_block`.
 * 2. Follows the chain for every deployed `active`/`paused` product, at the confirmed block
 *    (head − depth, so a shallow reorg cannot flip a status): engine `paused()` → chain reason,
 *    upstream vault not ok (src/chain/read-upstream-status.ts) → upstream reason,
 *    engine `deprecated()` → `deprecated` (final). `vault_pause` events: see applyPauseReasons.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type Address,
  encodeDeployData,
  getAddress,
  type Hash,
  keccak256,
  parseTransaction,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from 'viem';
import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient, ChainWallet } from '../chain/client.ts';
import { engineConstructorArgs } from '../chain/deploy.ts';
import { yieldEngineAbi, yieldEngineBytecode } from '../chain/generated/YieldEngine.ts';
import { readEngineFlags } from '../chain/read-engine-flags.ts';
import { readShareDecimals } from '../chain/read-share-decimals.ts';
import { readUpstreamStatus } from '../chain/read-upstream-status.ts';
import { chainErrorMessage, operatorWallet } from '../chain/send-engine-call.ts';
import type { Database } from '../db/client.ts';
import { createEventsRepo, dedupeKey } from '../db/events.ts';
import { createProductDeploysRepo } from '../db/product-deploys.ts';
import { createProductsRepo, type Product } from '../db/products.ts';
import { createSnapshotsRepo } from '../db/snapshots.ts';
import type { Logger } from '../logger.ts';
import { outboundPayload } from '../webhooks/event-catalogue.ts';
import { createLease, createLeasedJob } from '../worker/lease.ts';
import type { Job } from '../worker/runner.ts';
import { applyPauseReasons } from './lifecycle/status.ts';
import { readProvisionalSnapshot } from './metrics/provisional.ts';

export interface LifecycleOptions {
  db: Database;
  logger: Logger;
  chain: ChainSettings;
  client: ChainClient;
  /** Identity of this worker in the lease table. */
  holder: string;
  /** Clock for the once-per-UTC-day `vault_pause` (tests move it). */
  now?: () => Date;
  leaseTtlMs?: number;
}

export interface LifecycleTickResult {
  /** False when another worker holds this chain's lease. */
  leased: boolean;
  deployed: string[];
  /** Slugs whose status changed this tick. */
  moved: string[];
}

export function defaultHolder(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

export function createLifecycle(options: LifecycleOptions) {
  const { db, logger, chain, client, holder } = options;
  const now = options.now ?? (() => new Date());
  const leaseName = `lifecycle:${chain.chainId}`;
  const leaseTtlMs = options.leaseTtlMs ?? 30_000;
  const wallet = operatorWallet(chain);
  const products = createProductsRepo(db);
  const store = createProductDeploysRepo(db);
  const lease = createLease({ db, name: leaseName, holder, ttlMs: leaseTtlMs });
  const log = logger.child({ job: leaseName });
  const warnedNoDeployer = new Set<string>();

  function warnNoDeployer(p: Product): void {
    if (warnedNoDeployer.has(p.id)) return;
    warnedNoDeployer.add(p.id);
    log.warn(
      { slug: p.slug, chainId: chain.chainId },
      'no deployer_private_key for this chain: product stays pending_deploy',
    );
  }

  /**
   * Signs the deployment with `nonce`, records it, then broadcasts it. Returns whether the nonce
   * was taken (the transaction was recorded) and whether the broadcast went through.
   */
  async function startDeployment(
    wallet: ChainWallet,
    p: Product,
    nonce: number,
  ): Promise<{ recorded: boolean; sent: boolean }> {
    const data = encodeDeployData({
      abi: yieldEngineAbi,
      bytecode: yieldEngineBytecode,
      args: engineConstructorArgs({
        asset: p.assetAddress,
        underlyingVault: p.underlyingVaultAddress,
        name: p.engineName,
        symbol: p.engineSymbol,
        serviceFeeRecipient: p.serviceFeeRecipient,
        partnerFeeRecipient: p.partnerFeeRecipient,
        serviceFeeBps: p.serviceFeeBps,
        partnerFeeBps: p.partnerFeeBps,
        operator: wallet.account.address,
      }),
    });
    const request = await wallet.prepareTransactionRequest({ data, nonce });
    const raw = await wallet.signTransaction(request);
    const hash = keccak256(raw);
    // Not recorded: the product moved meanwhile, and the nonce stays free.
    if (!(await store.recordSigned(p.id, hash, raw))) return { recorded: false, sent: false };
    log.info({ slug: p.slug, txHash: hash, nonce }, 'deploying engine');
    try {
      await broadcast(raw);
      return { recorded: true, sent: true };
    } catch (err) {
      // Recorded: the next tick rebroadcasts the same bytes.
      log.warn({ slug: p.slug, txHash: hash, err: chainErrorMessage(err) }, 'broadcast failed');
      return { recorded: true, sent: false };
    }
  }

  /**
   * The first nonce for deployments started in this tick: the account's pending transaction
   * count, or past the highest nonce among this chain's recorded, unmined deployments when that
   * is higher (a deployment recorded but never broadcast, or dropped by the node, keeps its
   * nonce: it is rebroadcast, so a new one must not take it).
   */
  async function nextNonceFrom(address: Address): Promise<number> {
    const [pendingCount, recorded] = await Promise.all([
      client.getTransactionCount({ address, blockTag: 'pending' }),
      store.inFlightRawTxs(chain.chainId),
    ]);
    let next = pendingCount;
    for (const raw of recorded) {
      const n = parseTransaction(raw).nonce;
      if (n !== undefined && n + 1 > next) next = n + 1;
    }
    return next;
  }

  async function broadcast(raw: `0x${string}`): Promise<void> {
    await client.sendRawTransaction({ serializedTransaction: raw });
  }

  /** Follows a recorded deployment; returns true when the product moved to active. */
  async function followDeployment(p: Product, txHash: Hash, head: bigint): Promise<boolean> {
    let receipt: Awaited<ReturnType<ChainClient['getTransactionReceipt']>> | undefined;
    try {
      receipt = await client.getTransactionReceipt({ hash: txHash });
    } catch (err) {
      if (!(err instanceof TransactionReceiptNotFoundError)) throw err;
    }
    if (!receipt) {
      await resendOrForget(p, txHash, head);
      return false;
    }
    if (receipt.status !== 'success' || !receipt.contractAddress) {
      // A constructor that reverted will revert again: hold it for the operator rather than
      // paying for the same failure every tick.
      log.error(
        { slug: p.slug, txHash },
        'engine deployment reverted; product held (fix it, then `product release`)',
      );
      await store.clearDeploy(p.id, txHash, true);
      return false;
    }
    if (receipt.blockNumber > head - BigInt(chain.confirmationDepth)) return false;

    const engine = getAddress(receipt.contractAddress); // EIP-55, as every stored address
    const [shareDecimals, block] = await Promise.all([
      readShareDecimals(client, { vault: engine, blockNumber: receipt.blockNumber }),
      client.getBlock({ blockNumber: receipt.blockNumber }),
    ]);
    const at = new Date(Number(block.timestamp) * 1000);
    // Read before the transaction: a failed read leaves the product pending for the next tick.
    const firstSnapshot = await readProvisionalSnapshot(client, {
      productId: p.id,
      engine,
      underlyingVault: p.underlyingVaultAddress,
      blockNumber: receipt.blockNumber,
      blockTimestamp: at,
    });
    const moved = await db.transaction(async (tx) => {
      const ok = await createProductsRepo(tx).markDeployed(p.id, {
        engineAddress: engine,
        shareDecimals,
        block: receipt.blockNumber,
        at,
      });
      if (!ok) return false;
      await createEventsRepo(tx).insert({
        partnerId: p.partnerId,
        environment: p.environment,
        productId: p.id,
        eventType: 'product.deployed',
        dedupeKey: dedupeKey.productDeployed(p.slug),
        payload: outboundPayload('product.deployed', {
          slug: p.slug,
          chain_id: chain.chainId,
          engine_contract_address: engine,
          underlying_vault_address: p.underlyingVaultAddress,
          status: 'active',
          occurred_at: at.toISOString(),
        }),
        occurredAt: at,
      });
      // Unless the processor already wrote the day's real row (it never gives way to this one).
      await createSnapshotsRepo(tx).insertProvisional(firstSnapshot);
      return true;
    });
    if (moved) {
      log.info(
        { slug: p.slug, engine, block: receipt.blockNumber.toString() },
        'engine deployed; product active',
      );
    }
    return moved;
  }

  /** The receipt of `hash`, or undefined while it is not mined. */
  async function receiptOf(hash: Hash) {
    try {
      return await client.getTransactionReceipt({ hash });
    } catch (err) {
      if (err instanceof TransactionReceiptNotFoundError) return undefined;
      throw err;
    }
  }

  /** Whether the node knows the transaction (in its pool, or mined). */
  async function nodeKnows(hash: Hash): Promise<boolean> {
    try {
      await client.getTransaction({ hash });
      return true;
    } catch (err) {
      if (err instanceof TransactionNotFoundError) return false;
      throw err;
    }
  }

  /**
   * The deployment has no receipt. While the node knows it (in its pool, or mined since the
   * receipt was read) it is only waited for. Otherwise the stored bytes are rebroadcast; when that
   * fails and the deployer's nonce was already used at a CONFIRMED block while this transaction
   * still has no receipt, another transaction took the nonce (replaced, or lost in a reset) and
   * this one can never be mined: forget it and deploy anew at the next tick. The nonce count is
   * read before the receipt is checked again, so a transaction mined in between (a node that
   * answers the broadcast before it mines) is never mistaken for a lost one.
   */
  async function resendOrForget(p: Product, txHash: Hash, head: bigint): Promise<void> {
    const raw = await store.rawTx(p.id);
    if (!raw) return;
    if (await nodeKnows(txHash)) return;
    const nonce = parseTransaction(raw).nonce ?? 0;
    try {
      await broadcast(raw);
      return;
    } catch (err) {
      const from = wallet?.account.address;
      const confirmed = head - BigInt(chain.confirmationDepth);
      const used =
        from && confirmed >= 0n
          ? await client.getTransactionCount({ address: from, blockNumber: confirmed })
          : undefined;
      if (used !== undefined && used > nonce && !(await receiptOf(txHash))) {
        log.warn(
          { slug: p.slug, txHash, err: chainErrorMessage(err) },
          'deployment transaction was never mined and its nonce is used: deploying anew',
        );
        await store.clearDeploy(p.id, txHash, false);
      } else {
        log.warn({ slug: p.slug, txHash, err: chainErrorMessage(err) }, 'rebroadcast failed');
      }
    }
  }

  async function deployPending(head: bigint, result: LifecycleTickResult): Promise<void> {
    const [pending, held] = await Promise.all([
      products.listPendingDeploy(chain.chainId),
      store.heldIds(),
    ]);
    // Nonces of this tick's new deployments: read once, then consecutive (startDeployment).
    let nextNonce: number | undefined;
    // After a failed broadcast no further deployment starts this tick: each would only add to the
    // nonce gap behind the one the node refused (the next tick rebroadcasts it first).
    let canStart = true;
    for (const p of pending) {
      if (held.has(p.id) && !p.deployTxHash) continue;
      try {
        const txHash = p.deployTxHash;
        if (!txHash) {
          // A deployment just broadcast is followed from the next tick on: it cannot be
          // `confirmationDepth` blocks deep yet, and the node may not even have mined it.
          if (!wallet) {
            warnNoDeployer(p);
            continue;
          }
          if (!canStart) continue;
          nextNonce ??= await nextNonceFrom(wallet.account.address);
          const started = await startDeployment(wallet, p, nextNonce);
          if (started.recorded) nextNonce += 1;
          if (started.recorded && !started.sent) canStart = false;
          continue;
        }
        if (await followDeployment(p, txHash, head)) result.deployed.push(p.slug);
      } catch (err) {
        log.error({ slug: p.slug, err: chainErrorMessage(err) }, 'deployment step failed');
      }
    }
  }

  async function followStatuses(confirmed: bigint, result: LifecycleTickResult): Promise<void> {
    const deployed = await products.listDeployedOnChain(chain.chainId);
    for (const p of deployed) {
      if (p.status !== 'active' && p.status !== 'paused') continue;
      if (!p.engineAddress || p.deployedBlock === null || p.deployedBlock > confirmed) continue;
      try {
        const [flags, upstream] = await Promise.all([
          readEngineFlags(client, { engine: p.engineAddress, blockNumber: confirmed }),
          readUpstreamStatus(client, {
            vault: p.underlyingVaultAddress,
            engine: p.engineAddress,
            blockNumber: confirmed,
          }),
        ]);
        const halted = !upstream.ok;
        if (flags.deprecated) {
          if (await products.markDeprecated(p.id)) {
            result.moved.push(p.slug);
            log.info({ slug: p.slug }, 'engine deprecated on chain; product deprecated');
          }
          continue;
        }
        const moved = await applyPauseReasons(
          db,
          p,
          { chainPaused: flags.paused, upstreamHalted: halted },
          now(),
        );
        if (moved && moved.before !== moved.after) {
          result.moved.push(p.slug);
          log.info(
            {
              slug: p.slug,
              from: moved.before,
              to: moved.after,
              enginePaused: flags.paused,
              halted,
            },
            'product status follows the chain',
          );
        }
      } catch (err) {
        log.error({ slug: p.slug, err: chainErrorMessage(err) }, 'status read failed');
      }
    }
  }

  async function tick(): Promise<LifecycleTickResult> {
    const ran = await lease.run(round);
    return ran?.value ?? { leased: false, deployed: [], moved: [] };
  }

  /** One round while holding the chain's lease: deployments first, then statuses. */
  async function round(): Promise<LifecycleTickResult> {
    const result: LifecycleTickResult = { leased: true, deployed: [], moved: [] };
    const head = await client.getBlockNumber({ cacheTime: 0 }); // never a cached head: depth is counted from it
    await deployPending(head, result);
    const confirmed = head - BigInt(chain.confirmationDepth);
    if (confirmed >= 0n) await followStatuses(confirmed, result);
    return result;
  }

  return {
    tick,
    /** The periodic job; on stop it hands the lease back so another worker takes over at once. */
    job(intervalMs: number): Job {
      return createLeasedJob({ lease, intervalMs, logger, tick });
    },
  };
}

export type Lifecycle = ReturnType<typeof createLifecycle>;
