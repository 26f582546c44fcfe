/**
 * The two questions the operator's senders ask a node about a transaction they sent (the signer
 * in tx-sender.ts, the engine deployer): is it mined, and does the node know it at all. viem
 * answers "not found" with an error; here it is an answer, and every other error (a provider
 * refusal, a timeout) still throws, so a flaky provider is never read as "dropped".
 */
import {
  type Hash,
  TransactionNotFoundError,
  type TransactionReceipt,
  TransactionReceiptNotFoundError,
} from 'viem';
import type { ChainClient } from './client.ts';

/** The receipt of `hash`, or undefined while it is not mined. */
export async function receiptOrUndefined(
  client: ChainClient,
  hash: Hash,
): Promise<TransactionReceipt | undefined> {
  try {
    return await client.getTransactionReceipt({ hash });
  } catch (err) {
    if (err instanceof TransactionReceiptNotFoundError) return undefined;
    throw err;
  }
}

/** Whether the node knows the transaction (in its pool, or mined). */
export async function nodeKnowsTransaction(client: ChainClient, hash: Hash): Promise<boolean> {
  try {
    await client.getTransaction({ hash });
    return true;
  } catch (err) {
    if (err instanceof TransactionNotFoundError) return false;
    throw err;
  }
}
