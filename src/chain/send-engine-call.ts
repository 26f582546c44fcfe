/**
 * The operator's writes to an engine (pause, unpause, deprecate; setFees, applyFeeChange,
 * cancelFeeChange), sent by the chain's deployer account (the engine owner). Transactions are signed
 * locally with the configured key.
 */
import { type Address, BaseError, type Hash, type TransactionReceipt } from 'viem';
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

export type EngineOperatorCall =
  | 'pause'
  | 'unpause'
  | 'deprecate'
  | 'applyFeeChange'
  | 'cancelFeeChange';

/** A fee change: applies at once when neither fee rises, otherwise scheduled (see the engine). */
export interface SetFeesCall {
  serviceFeeBps: number;
  partnerFeeBps: number;
}

function callOf(call: EngineOperatorCall | SetFeesCall): { name: string; args: unknown[] } {
  if (typeof call === 'string') return { name: call, args: [] };
  return { name: 'setFees', args: [call.serviceFeeBps, call.partnerFeeBps] };
}

/**
 * Sends an operator call to an engine and waits for its receipt; throws when it fails. The receipt
 * carries the engine's events (e.g. FeeChangeScheduled or FeesUpdated after a setFees).
 */
export async function sendEngineCallReceipt(
  chain: ChainSettings,
  client: ChainClient,
  params: { engine: Address; call: EngineOperatorCall | SetFeesCall },
): Promise<TransactionReceipt> {
  const { engine } = params;
  const { name, args } = callOf(params.call);
  const wallet = operatorWallet(chain);
  if (!wallet) {
    throw new OperatorError(
      `chain ${chain.chainId} has no deployer_private_key configured: cannot send ${name}()`,
    );
  }
  let hash: Hash;
  try {
    // The gas estimate runs the call: a call the engine refuses fails here, its error decoded.
    hash = await wallet.writeContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: name,
      args,
    } as Parameters<typeof wallet.writeContract>[0]);
  } catch (err) {
    throw new OperatorError(`${name}() on ${engine} failed: ${chainErrorMessage(err)}`);
  }
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 120_000 });
  if (receipt.status !== 'success') {
    throw new OperatorError(`${name}() on ${engine} reverted (transaction ${hash})`);
  }
  return receipt;
}

/** Sends an operator call to an engine and waits for its receipt; throws when it fails. */
export async function sendEngineCall(
  chain: ChainSettings,
  client: ChainClient,
  params: { engine: Address; call: EngineOperatorCall | SetFeesCall },
): Promise<Hash> {
  return (await sendEngineCallReceipt(chain, client, params)).transactionHash;
}
