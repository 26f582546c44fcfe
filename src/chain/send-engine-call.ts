/**
 * The operator's writes to an engine (pause, unpause, deprecate), sent by the chain's deployer
 * account (the engine owner). Transactions are signed locally with the configured key.
 */
import { type Address, BaseError, type Hash } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { ChainSettings } from './chains.ts';
import { type ChainClient, type ChainWallet, createChainWallet } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';

export class OperatorError extends Error {
  override name = 'OperatorError';
}

/** The deployer's wallet on `chain`, or undefined when the chain has no deployer key configured. */
export function operatorWallet(chain: ChainSettings): ChainWallet | undefined {
  if (!chain.deployerPrivateKey) return undefined;
  return createChainWallet(chain, privateKeyToAccount(chain.deployerPrivateKey));
}

/** One line for an operator: viem's short message, without its multi-line details. */
export function chainErrorMessage(err: unknown): string {
  if (err instanceof BaseError) return err.shortMessage;
  return err instanceof Error ? err.message : String(err);
}

export type EngineOperatorCall = 'pause' | 'unpause' | 'deprecate';

/** Sends an operator call to an engine and waits for its receipt; throws when it fails. */
export async function sendEngineCall(
  chain: ChainSettings,
  client: ChainClient,
  params: { engine: Address; call: EngineOperatorCall },
): Promise<Hash> {
  const { engine, call } = params;
  const wallet = operatorWallet(chain);
  if (!wallet) {
    throw new OperatorError(
      `chain ${chain.chainId} has no deployer_private_key configured: cannot send ${call}()`,
    );
  }
  let hash: Hash;
  try {
    hash = await wallet.writeContract({ address: engine, abi: yieldEngineAbi, functionName: call });
  } catch (err) {
    throw new OperatorError(`${call}() on ${engine} failed: ${chainErrorMessage(err)}`);
  }
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 120_000 });
  if (receipt.status !== 'success') {
    throw new OperatorError(`${call}() on ${engine} reverted (transaction ${hash})`);
  }
  return hash;
}
