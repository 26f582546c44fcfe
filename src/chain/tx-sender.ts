/**
 * The operator's transactions on one chain, from one account: sent with EIP-1559 fees within the
 * chain's cap, followed until mined, and never left stuck.
 *
 * - Nonces belong to one process at a time: a nonce is chosen, the transaction signed, recorded
 *   (chain_transactions) and broadcast under the lease `nonce:<chainId>:<address>` (the deployer
 *   takes the same lease before it starts deployments). The next nonce is past the node's pending
 *   count, every pending row and every in-flight deployment, so a restart (of this process or of
 *   the node, whose pool forgets) never hands a nonce out twice.
 * - A transaction still unmined `replaceAfterBlocks` blocks after it was sent (or, when it waited
 *   behind an earlier nonce, after it became next in line) is replaced at the
 *   same nonce with bumped fees (fees.ts), up to the cap; each replacement is logged and counted.
 *   Every attempt's hash is kept: whichever is mined settles the row.
 * - A transaction that reverts, or whose nonce another transaction took (dropped), is settled with
 *   what to do, and reported to the caller.
 * Later operations wait behind a stuck one by nonce order, on the chain itself; followPending (the
 * lifecycle worker, each tick) keeps replacing a stuck transaction after the CLI that sent it
 * stopped waiting.
 */

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  type Account,
  type Address,
  type Hex,
  keccak256,
  parseTransaction,
  type TransactionReceipt,
} from 'viem';
import { type ChainTx, createChainTransactionsRepo } from '../db/chain-transactions.ts';
import type { Queryable } from '../db/client.ts';
import { createLeasesRepo } from '../db/leases.ts';
import { BaseError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { transactionReplacements } from '../telemetry/metrics.ts';
import type { ChainSettings } from './chains.ts';
import type { ChainClient } from './client.ts';
import { bumpedFees, type Fees, suggestedFees } from './fees.ts';
import {
  DEFAULT_TRANSACTION_POLICY,
  isLocalChain,
  type TransactionPolicy,
} from './signer-settings.ts';
import { nodeKnowsTransaction, receiptOrUndefined } from './transaction-lookups.ts';

export class TransactionFailedError extends BaseError<'transaction_failed'> {
  override name = 'TransactionFailedError';
  constructor(
    message: string,
    readonly tx: ChainTx,
  ) {
    super('transaction_failed', message);
  }
}

/** This process, in the nonce lease; one per process, so its own sends never wait on each other. */
export const PROCESS_HOLDER = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/** The gas limit is the estimate plus 1/GAS_MARGIN_DIVISOR of it (see send). */
const GAS_MARGIN_DIVISOR = 4n;

export function nonceLeaseName(chainId: number, address: Address): string {
  return `nonce:${chainId}:${address.toLowerCase()}`;
}

export function transactionPolicy(chain: ChainSettings): TransactionPolicy {
  return chain.transactions ?? DEFAULT_TRANSACTION_POLICY;
}

/**
 * The next free nonce of `address`: past the node's pending count, past every pending recorded
 * transaction and past every in-flight deployment (products.deploy_raw_tx).
 */
export async function nextNonce(
  db: Queryable,
  client: ChainClient,
  chainId: number,
  address: Address,
): Promise<number> {
  const [pendingCount, highest, deploys] = await Promise.all([
    client.getTransactionCount({ address, blockTag: 'pending' }),
    createChainTransactionsRepo(db).highestPendingNonce(chainId, address),
    db.query<{ deploy_raw_tx: Hex }>(
      `SELECT deploy_raw_tx FROM products
       WHERE chain_id = $1 AND status = 'pending_deploy' AND deploy_raw_tx IS NOT NULL`,
      [chainId],
    ),
  ]);
  let next = pendingCount;
  if (highest !== undefined && highest + 1 > next) next = highest + 1;
  for (const r of deploys.rows) {
    const n = parseTransaction(r.deploy_raw_tx).nonce;
    if (n !== undefined && n + 1 > next) next = n + 1;
  }
  return next;
}

export interface TxSenderOptions {
  db: Queryable;
  chain: ChainSettings;
  client: ChainClient;
  account: Account;
  log: Logger;
  /** Identity in the nonce lease (default: this process). */
  holder?: string;
  /** How long the nonce lease holds when its holder dies mid-send. */
  leaseTtlMs?: number;
  /** How long a send waits for another process's lease before giving up. */
  leaseWaitMs?: number;
}

export interface SendRequest {
  to: Address;
  data: Hex;
  value?: bigint;
  /** What it is for, as the operator reads it in `tx list` (e.g. "pause usdc-flex"). */
  purpose: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createTxSender(options: TxSenderOptions) {
  const { db, chain, client, account, log } = options;
  const holder = options.holder ?? PROCESS_HOLDER;
  const leaseTtlMs = options.leaseTtlMs ?? 30_000;
  const txs = createChainTransactionsRepo(db);
  const leases = createLeasesRepo(db);
  const leaseName = nonceLeaseName(chain.chainId, account.address);
  const policy = transactionPolicy(chain);
  const chainId = chain.chainId;
  const warnedAtCap = new Set<string>();
  // Each step costs a few RPC calls: a public chain's paid quota is not spent polling every 200 ms.
  const pollMs = isLocalChain(chainId, chain.local)
    ? client.pollingInterval
    : Math.max(client.pollingInterval, 2_000);

  async function withNonceLease<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (options.leaseWaitMs ?? 60_000);
    while (!(await leases.acquire(leaseName, holder, leaseTtlMs))) {
      if (Date.now() > deadline) {
        const other = await leases.holderOf(leaseName);
        throw new Error(
          `the nonces of ${account.address} on chain ${chainId} are held by ${other ?? 'another process'}: ` +
            'wait for its transaction, or stop that process',
        );
      }
      await sleep(200);
    }
    try {
      return await fn();
    } finally {
      await leases.release(leaseName, holder);
    }
  }

  async function sign(
    t: { nonce: number; to: Address | null; data: Hex; value: bigint; gas: bigint },
    fees: Fees,
  ): Promise<{ raw: Hex; hash: Hex }> {
    if (!account.signTransaction) throw new Error('the signer cannot sign transactions');
    const raw = await account.signTransaction({
      type: 'eip1559',
      chainId,
      nonce: t.nonce,
      to: t.to ?? undefined,
      data: t.data,
      value: t.value,
      gas: t.gas,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    return { raw, hash: keccak256(raw) };
  }

  async function broadcast(tx: { id: string; txHash: Hex }, raw: Hex): Promise<void> {
    try {
      await client.sendRawTransaction({ serializedTransaction: raw });
    } catch (err) {
      // Recorded: followPending rebroadcasts it, or finds it mined or replaced meanwhile.
      log.warn(
        {
          chainId,
          txId: tx.id,
          txHash: tx.txHash,
          err: err instanceof Error ? err.message.split('\n')[0] : String(err),
        },
        'broadcast failed; the transaction is rebroadcast',
      );
    }
  }

  /**
   * Records and broadcasts a transaction; returns its row (pending). A call the contract refuses
   * fails here, at the gas estimate, and nothing is recorded.
   */
  async function send(request: SendRequest): Promise<ChainTx> {
    const value = request.value ?? 0n;
    const estimate = await client.estimateGas({
      account: account.address,
      to: request.to,
      data: request.data,
      value,
    });
    // A quarter more than the estimate: the estimate runs at the latest block, and the mined block
    // can take a costlier branch (an underlying that accrues interest on its first touch of a
    // block, a pooled settlement that finds more to redeem). Unused gas is not paid for.
    const gas = estimate + estimate / GAS_MARGIN_DIVISOR;
    return withNonceLease(async () => {
      const [nonce, fees, head] = await Promise.all([
        nextNonce(db, client, chainId, account.address),
        suggestedFees(client, policy.maxFeePerGas),
        client.getBlockNumber({ cacheTime: 0 }),
      ]);
      const t = { nonce, to: request.to, data: request.data, value, gas };
      const { raw, hash } = await sign(t, fees);
      const tx = await txs.insert({
        chainId,
        sender: account.address,
        nonce,
        purpose: request.purpose,
        to: request.to,
        data: request.data,
        value,
        gas,
        ...fees,
        txHash: hash,
        rawTx: raw,
        sentBlock: head,
      });
      log.info(
        {
          chainId,
          txId: tx.id,
          txHash: hash,
          nonce,
          purpose: request.purpose,
          maxFeePerGas: fees.maxFeePerGas.toString(),
        },
        'transaction sent',
      );
      await broadcast(tx, raw);
      return tx;
    });
  }

  const receiptOf = (hash: Hex) => receiptOrUndefined(client, hash);
  const nodeKnows = (hash: Hex) => nodeKnowsTransaction(client, hash);

  /** Settles `tx` from a receipt of any of its attempts; true when one was found. */
  async function settleFromReceipt(tx: ChainTx): Promise<boolean> {
    for (const hash of [...tx.hashes].reverse()) {
      const r = await receiptOf(hash);
      if (!r) continue;
      const feePaid = r.gasUsed * r.effectiveGasPrice;
      if (r.status === 'success') {
        await txs.settle(tx.id, {
          status: 'mined',
          minedTxHash: hash,
          blockNumber: r.blockNumber,
          feePaid,
        });
        log.info(
          { chainId, txId: tx.id, txHash: hash, nonce: tx.nonce, block: r.blockNumber.toString() },
          'transaction mined',
        );
      } else {
        const error =
          `${tx.purpose}: reverted on chain in block ${r.blockNumber} (transaction ${hash}); ` +
          'nothing changed but the fee: check the product (product show) and send it again if still wanted';
        await txs.settle(tx.id, {
          status: 'reverted',
          minedTxHash: hash,
          blockNumber: r.blockNumber,
          feePaid,
          error,
        });
        log.error({ chainId, txId: tx.id, txHash: hash, nonce: tx.nonce }, error);
      }
      return true;
    }
    return false;
  }

  /**
   * Transactions seen waiting behind an earlier nonce, and the block at which such a transaction
   * was first seen next in line. In memory: after a restart a transaction's wait counts from its
   * send again, which at worst replaces it once sooner than needed.
   */
  const queued = new Set<string>();
  const nextInLineSince = new Map<string, bigint>();

  /**
   * One step for a pending transaction: settle it when an attempt is mined; rebroadcast it when the
   * node forgot it; mark it dropped when its nonce was taken by another transaction; replace it when
   * it waited `replaceAfterBlocks` blocks. Answers the row as it is afterwards.
   */
  async function advance(id: string): Promise<ChainTx> {
    let tx = await txs.get(id);
    if (!tx) throw new Error(`no transaction ${id}`);
    if (tx.status !== 'pending') return tx;
    // The nonce count first: an attempt mined between the two reads is found by the receipt check.
    const used = await client.getTransactionCount({ address: account.address, blockTag: 'latest' });
    if (await settleFromReceipt(tx)) {
      queued.delete(id);
      nextInLineSince.delete(id);
      return (await txs.get(id))!;
    }
    if (used > tx.nonce) {
      queued.delete(id);
      nextInLineSince.delete(id);
      const error =
        `${tx.purpose}: dropped, another transaction took nonce ${tx.nonce} (sent outside the ` +
        'service, or by a process that did not hold the nonce lease); check on chain whether the ' +
        'operation happened, and send it again if not';
      await txs.settle(tx.id, { status: 'dropped', error });
      log.error({ chainId, txId: tx.id, txHash: tx.txHash, nonce: tx.nonce }, error);
      return (await txs.get(id))!;
    }
    const head = await client.getBlockNumber({ cacheTime: 0 });
    // Queued behind an earlier nonce: it cannot be mined before that one whatever it pays, so a
    // higher fee would be spent for nothing. Its wait counts from when it is next in line.
    if (tx.nonce > used) {
      queued.add(tx.id);
      if (!(await nodeKnows(tx.txHash))) await broadcast(tx, tx.rawTx);
      return tx;
    }
    if (queued.delete(tx.id)) nextInLineSince.set(tx.id, head);
    const waitingSince = nextInLineSince.get(tx.id) ?? tx.sentBlock;
    const since = waitingSince > tx.sentBlock ? waitingSince : tx.sentBlock;
    if (head - since >= BigInt(policy.replaceAfterBlocks)) {
      tx = await replace(tx, head);
      nextInLineSince.delete(tx.id);
    } else if (!(await nodeKnows(tx.txHash))) {
      await broadcast(tx, tx.rawTx);
    }
    return tx;
  }

  async function replace(tx: ChainTx, head: bigint): Promise<ChainTx> {
    const previous = {
      maxFeePerGas: tx.maxFeePerGas,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
    };
    const suggested = await suggestedFees(client, policy.maxFeePerGas);
    const next = bumpedFees(previous, suggested, policy.maxFeePerGas);
    if (!next) {
      if (!warnedAtCap.has(tx.txHash)) {
        warnedAtCap.add(tx.txHash);
        log.warn(
          {
            chainId,
            txId: tx.id,
            txHash: tx.txHash,
            nonce: tx.nonce,
            maxFeePerGas: tx.maxFeePerGas.toString(),
            cap: policy.maxFeePerGas.toString(),
          },
          'transaction stuck at the fee cap: raise max_fee_per_gas_gwei for this chain, or wait for fees to fall',
        );
      }
      if (!(await nodeKnows(tx.txHash))) await broadcast(tx, tx.rawTx);
      return tx;
    }
    const { raw, hash } = await sign(tx, next);
    if (
      !(await txs.replace(tx.id, tx.txHash, { txHash: hash, rawTx: raw, ...next, sentBlock: head }))
    ) {
      return (await txs.get(tx.id))!; // another process replaced it first
    }
    transactionReplacements.inc({ chain_id: String(chainId) });
    log.warn(
      {
        chainId,
        txId: tx.id,
        nonce: tx.nonce,
        previousTxHash: tx.txHash,
        txHash: hash,
        attempt: tx.attempts + 1,
        maxFeePerGas: next.maxFeePerGas.toString(),
        maxPriorityFeePerGas: next.maxPriorityFeePerGas.toString(),
      },
      `transaction not mined after ${policy.replaceAfterBlocks} blocks: replaced with higher fees`,
    );
    const replaced = (await txs.get(tx.id))!;
    await broadcast(replaced, raw);
    return replaced;
  }

  /**
   * Follows `id` until it is mined (answers its receipt) or settles otherwise (throws
   * TransactionFailedError with what to do); past `timeoutMs` it throws while the transaction
   * stays pending, followed on by the worker.
   */
  async function waitMined(id: string, timeoutMs = 120_000): Promise<TransactionReceipt> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const tx = await advance(id);
      if (tx.status === 'mined') return client.getTransactionReceipt({ hash: tx.minedTxHash! });
      if (tx.status !== 'pending') throw new TransactionFailedError(tx.error ?? tx.status, tx);
      if (Date.now() > deadline) {
        throw new TransactionFailedError(
          `${tx.purpose}: not mined after ${Math.round(timeoutMs / 1000)} s (nonce ${tx.nonce}, ${tx.txHash}); ` +
            'it stays pending and is replaced with higher fees by the worker: follow it with `yield-service tx list`',
          tx,
        );
      }
      await sleep(pollMs);
    }
  }

  /** One step for every pending transaction of this account on the chain, oldest nonce first. */
  async function followPending(): Promise<ChainTx[]> {
    const out: ChainTx[] = [];
    for (const tx of await txs.pending(chainId)) {
      if (tx.sender !== account.address.toLowerCase()) continue;
      out.push(await advance(tx.id));
    }
    return out;
  }

  return { send, advance, waitMined, followPending, address: account.address };
}

export type TxSender = ReturnType<typeof createTxSender>;
