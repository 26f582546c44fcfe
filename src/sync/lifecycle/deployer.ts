/**
 * The deployer: starts and follows the engine deployments of a chain's `pending_deploy` products
 * (not held), through the chain's deployer account. A deployment is signed locally and its hash and
 * raw bytes are stored BEFORE it is broadcast, so a worker that restarts at any point resumes the
 * same transaction (rebroadcasting it when the node never saw it) and never deploys a second
 * engine. Nonces are assigned here, not by the node: read once per tick (see nextNonceFrom) and
 * incremented locally, so N products started in one tick get N consecutive nonces. A recorded
 * deployment is forgotten (and redone) only when the node does not know it, it has no receipt,
 * and its nonce was taken by another transaction at a confirmed block (see resendOrForget). Once
 * the receipt is `confirmationDepth` blocks deep, activation takes over (activation.ts).
 * A deployment still unmined `replace_after_blocks` blocks after it was signed is replaced at the
 * same nonce with bumped fees (replaceIfStuck; earlier attempts kept, any may be the one mined).
 * New deployments start only while this process holds the signer's nonce lease (the one the
 * operator's transactions take, src/chain/tx-sender.ts), and their nonces are past the operator's
 * pending transactions too: the CLI and the worker never hand out the same nonce.
 */
import { type Address, encodeDeployData, type Hash, keccak256, parseTransaction } from 'viem';
import type { ChainSettings } from '../../chain/chains.ts';
import type { ChainClient, ChainWallet } from '../../chain/client.ts';
import { engineConstructorArgs } from '../../chain/deploy.ts';
import { bumpedFees, suggestedFees } from '../../chain/fees.ts';
import { yieldEngineAbi, yieldEngineBytecode } from '../../chain/generated/YieldEngine.ts';
import { chainErrorMessage, operatorWallet } from '../../chain/send-engine-call.ts';
import { nodeKnowsTransaction, receiptOrUndefined } from '../../chain/transaction-lookups.ts';
import {
  nextNonce,
  nonceLeaseName,
  PROCESS_HOLDER,
  transactionPolicy,
} from '../../chain/tx-sender.ts';
import type { Queryable } from '../../db/client.ts';
import { createLeasesRepo } from '../../db/leases.ts';
import type { ProductDeploysRepo } from '../../db/product-deploys.ts';
import type { Product, ProductsRepo } from '../../db/products.ts';
import type { Logger } from '../../logger.ts';
import { transactionReplacements } from '../../telemetry/metrics.ts';
import { isRetryable } from '../../worker/errors.ts';
import type { Activation } from './activation.ts';

export interface DeployerDeps {
  chain: ChainSettings;
  client: ChainClient;
  products: ProductsRepo;
  deploys: ProductDeploysRepo;
  activation: Activation;
  log: Logger;
  /** Where the nonce lease and the operator's pending transactions are. */
  db: Queryable;
  /** This worker in the nonce lease. */
  holder?: string;
}

export function createDeployer(deps: DeployerDeps) {
  const { chain, client, log, activation } = deps;
  const store = deps.deploys;
  const products = deps.products;
  const wallet = operatorWallet(chain);
  const warnedNoDeployer = new Set<string>();
  const activate = activation.activate;

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
    // Fees within the chain's cap (signer-settings.ts), as for the operator's transactions; a
    // deployment left unmined replace_after_blocks blocks is replaced (replaceIfStuck).
    const [fees, head] = await Promise.all([
      suggestedFees(client, transactionPolicy(chain).maxFeePerGas),
      client.getBlockNumber({ cacheTime: 0 }),
    ]);
    const request = await wallet.prepareTransactionRequest({ data, nonce, ...fees });
    const raw = await wallet.signTransaction(request);
    const hash = keccak256(raw);
    // Not recorded: the product moved meanwhile, and the nonce stays free.
    if (!(await store.recordSigned(p.id, hash, raw, head))) return { recorded: false, sent: false };
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
    // The in-flight deployments and the operator's pending transactions (tx-sender.ts).
    return nextNonce(deps.db, client, chain.chainId, address);
  }

  const leases = createLeasesRepo(deps.db);
  const holder = deps.holder ?? PROCESS_HOLDER;

  async function broadcast(raw: `0x${string}`): Promise<void> {
    await client.sendRawTransaction({ serializedTransaction: raw });
  }

  /** The receipt of the current attempt or of any attempt it replaced, when one is mined. */
  async function anyReceipt(p: Product, txHash: Hash) {
    const current = await receiptOf(txHash);
    if (current) return current;
    for (const prior of (await store.attempts(p.id)).prior) {
      const r = await receiptOf(prior);
      if (r) return r;
    }
    return undefined;
  }

  const warnedAtCap = new Set<string>();

  /**
   * Replaces the current attempt at the same nonce with bumped fees (fees.ts) once it has waited
   * replace_after_blocks blocks unmined; recorded before broadcast, like the first. Returns whether
   * it replaced it. Not past the chain's cap: there it waits, logged once.
   */
  async function replaceIfStuck(p: Product, txHash: Hash): Promise<boolean> {
    if (!wallet) return false;
    const policy = transactionPolicy(chain);
    const [{ sentBlock }, raw, head] = await Promise.all([
      store.attempts(p.id),
      store.rawTx(p.id),
      client.getBlockNumber({ cacheTime: 0 }),
    ]);
    if (!raw || sentBlock === null || head - sentBlock < BigInt(policy.replaceAfterBlocks)) {
      return false;
    }
    const t = parseTransaction(raw);
    if (t.maxFeePerGas === undefined || t.maxPriorityFeePerGas === undefined) return false;
    const next = bumpedFees(
      { maxFeePerGas: t.maxFeePerGas, maxPriorityFeePerGas: t.maxPriorityFeePerGas },
      await suggestedFees(client, policy.maxFeePerGas),
      policy.maxFeePerGas,
    );
    if (!next) {
      if (!warnedAtCap.has(txHash)) {
        warnedAtCap.add(txHash);
        log.warn(
          { slug: p.slug, txHash, nonce: t.nonce, cap: policy.maxFeePerGas.toString() },
          'engine deployment stuck at the fee cap: raise max_fee_per_gas_gwei for this chain, or wait for fees to fall',
        );
      }
      return false;
    }
    const replacement = await wallet.signTransaction({
      chainId: chain.chainId,
      type: 'eip1559',
      nonce: t.nonce,
      gas: t.gas,
      data: t.data,
      value: t.value ?? 0n,
      ...next,
    } as never);
    const hash = keccak256(replacement);
    if (
      !(await store.recordReplacement(p.id, txHash, {
        txHash: hash,
        raw: replacement,
        sentBlock: head,
      }))
    ) {
      return false; // the product moved, or another worker replaced it first
    }
    transactionReplacements.inc({ chain_id: String(chain.chainId) });
    log.warn(
      {
        slug: p.slug,
        nonce: t.nonce,
        previousTxHash: txHash,
        txHash: hash,
        maxFeePerGas: next.maxFeePerGas.toString(),
        maxPriorityFeePerGas: next.maxPriorityFeePerGas.toString(),
      },
      `engine deployment not mined after ${policy.replaceAfterBlocks} blocks: replaced with higher fees`,
    );
    try {
      await broadcast(replacement);
    } catch (err) {
      log.warn({ slug: p.slug, txHash: hash, err: chainErrorMessage(err) }, 'broadcast failed');
    }
    return true;
  }

  /** Follows a recorded deployment; returns true when the product moved to active. */
  async function followDeployment(p: Product, txHash: Hash, confirmed: bigint): Promise<boolean> {
    const receipt = await anyReceipt(p, txHash);
    if (!receipt) {
      if (!(await replaceIfStuck(p, txHash))) await resendOrForget(p, txHash, confirmed);
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
    if (receipt.blockNumber > confirmed) return false;

    return activate(p, {
      contractAddress: receipt.contractAddress,
      blockNumber: receipt.blockNumber,
    });
  }

  const receiptOf = (hash: Hash) => receiptOrUndefined(client, hash);
  const nodeKnows = (hash: Hash) => nodeKnowsTransaction(client, hash);

  /**
   * The deployment has no receipt. While the node knows it (in its pool, or mined since the
   * receipt was read) it is only waited for. Otherwise the stored bytes are rebroadcast; when that
   * fails and the deployer's nonce was already used at a CONFIRMED block while this transaction
   * still has no receipt, another transaction took the nonce (replaced, or lost in a reset) and
   * this one can never be mined: forget it and deploy anew at the next tick. The nonce count is
   * read before the receipt is checked again, so a transaction mined in between (a node that
   * answers the broadcast before it mines) is never mistaken for a lost one.
   */
  async function resendOrForget(p: Product, txHash: Hash, confirmed: bigint): Promise<void> {
    const raw = await store.rawTx(p.id);
    if (!raw) return;
    if (await nodeKnows(txHash)) return;
    const nonce = parseTransaction(raw).nonce ?? 0;
    try {
      await broadcast(raw);
      return;
    } catch (err) {
      const from = wallet?.account.address;
      const used =
        from && confirmed >= 0n
          ? await client.getTransactionCount({ address: from, blockNumber: confirmed })
          : undefined;
      if (used !== undefined && used > nonce && !(await anyReceipt(p, txHash))) {
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

  /** Starts new deployments and follows recorded ones; returns the slugs that became active. */
  async function deployPending(confirmed: bigint): Promise<string[]> {
    const deployed: string[] = [];
    const [pending, held] = await Promise.all([
      products.listPendingDeploy(chain.chainId),
      store.heldIds(),
    ]);
    // Nonces of this tick's new deployments: read once, then consecutive (startDeployment).
    let nextNonce: number | undefined;
    // After a failed broadcast no further deployment starts this tick: each would only add to the
    // nonce gap behind the one the node refused (the next tick rebroadcasts it first).
    let canStart = true;
    let leaseName: string | undefined;
    try {
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
            if (!leaseName) {
              // Another process (an operator command) is sending: start deployments next tick.
              const name = nonceLeaseName(chain.chainId, wallet.account.address);
              if (!(await leases.acquire(name, holder, 30_000))) {
                canStart = false;
                continue;
              }
              leaseName = name;
            }
            nextNonce ??= await nextNonceFrom(wallet.account.address);
            const started = await startDeployment(wallet, p, nextNonce);
            if (started.recorded) nextNonce += 1;
            if (started.recorded && !started.sent) canStart = false;
            continue;
          }
          if (await followDeployment(p, txHash, confirmed)) deployed.push(p.slug);
        } catch (err) {
          // A dropped database connection or an RPC hiccup is retried next tick: a warning.
          log[isRetryable(err) ? 'warn' : 'error'](
            { slug: p.slug, err: chainErrorMessage(err) },
            'deployment step failed',
          );
        }
      }
    } finally {
      if (leaseName) await leases.release(leaseName, holder);
    }
    return deployed;
  }

  return { deployPending };
}

export type Deployer = ReturnType<typeof createDeployer>;
