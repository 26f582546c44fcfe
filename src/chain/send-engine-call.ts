/**
 * The operator's writes to an engine (pause, unpause, deprecate; setFees, applyFeeChange,
 * cancelFeeChange), sent by the chain's signer account (the engine owner) through the transaction
 * sender (tx-sender.ts): recorded before broadcast, fees within the chain's cap, replaced when stuck.
 */

import {
  type Address,
  encodeFunctionData,
  type Hash,
  type TransactionReceipt,
  BaseError as ViemError,
} from 'viem';
import type { Queryable } from '../db/client.ts';
import { BaseError, type BaseErrorOptions } from '../errors.ts';
import { createLogger, type Logger } from '../logger.ts';
import type { ChainSettings } from './chains.ts';
import { type ChainClient, type ChainWallet, createChainWallet } from './client.ts';
import { yieldEngineAbi } from './generated/YieldEngine.ts';
import { RemoteSignerError } from './remote-signer.ts';
import { SignerError, signerAccount } from './signer.ts';
import { createTxSender, TransactionFailedError } from './tx-sender.ts';

export class OperatorError extends BaseError<'operator_failed'> {
  override name = 'OperatorError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('operator_failed', message, options);
  }
}

/** The signer's wallet on `chain`, or undefined when the chain has no signer configured. */
export function operatorWallet(chain: ChainSettings): ChainWallet | undefined {
  const account = signerAccount(chain);
  return account ? createChainWallet(chain, account) : undefined;
}

/** One line for an operator: viem's short message, without its multi-line details. */
export function chainErrorMessage(err: unknown): string {
  if (err instanceof ViemError) return err.shortMessage;
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

/** Where the operator's transactions are recorded, and where their progress is logged. */
export interface SendContext {
  db: Queryable;
  /** Replacements and failures are logged here (default: warnings to stderr). */
  logger?: Logger;
  /** How long to wait for the receipt before leaving the transaction to the worker. */
  timeoutMs?: number;
}

/**
 * Sends an operator call to an engine and waits for its receipt; throws when it fails. The receipt
 * carries the engine's events (e.g. FeeChangeScheduled or FeesUpdated after a setFees).
 */
export async function sendEngineCallReceipt(
  chain: ChainSettings,
  client: ChainClient,
  params: { engine: Address; call: EngineOperatorCall | SetFeesCall; purpose?: string },
  ctx: SendContext,
): Promise<TransactionReceipt> {
  const { engine } = params;
  const { name, args } = callOf(params.call);
  let account: ReturnType<typeof signerAccount>;
  try {
    account = signerAccount(chain);
  } catch (err) {
    if (err instanceof SignerError) throw new OperatorError(err.message);
    throw err;
  }
  if (!account) {
    throw new OperatorError(
      `chain ${chain.chainId} has no signer configured: cannot send ${name}() (set "signer" in CHAINS_FILE, see docs/maintainers/going-live.md)`,
    );
  }
  const sender = createTxSender({
    db: ctx.db,
    chain,
    client,
    account,
    log: ctx.logger ?? createLogger('warn', process.stderr),
  });
  const data = encodeFunctionData({
    abi: yieldEngineAbi,
    functionName: name,
    args,
  } as Parameters<typeof encodeFunctionData>[0]);
  let id: string;
  try {
    // The gas estimate runs the call: a call the engine refuses fails here, its error decoded.
    id = (
      await sender.send({ to: engine, data, purpose: params.purpose ?? `${name}() on ${engine}` })
    ).id;
  } catch (err) {
    throw new OperatorError(`${name}() on ${engine} failed: ${chainErrorMessage(err)}`);
  }
  try {
    return await sender.waitMined(id, ctx.timeoutMs);
  } catch (err) {
    if (err instanceof TransactionFailedError || err instanceof RemoteSignerError) {
      throw new OperatorError(err.message);
    }
    throw err;
  }
}

/** Sends an operator call to an engine and waits for its receipt; throws when it fails. */
export async function sendEngineCall(
  chain: ChainSettings,
  client: ChainClient,
  params: { engine: Address; call: EngineOperatorCall | SetFeesCall; purpose?: string },
  ctx: SendContext,
): Promise<Hash> {
  return (await sendEngineCallReceipt(chain, client, params, ctx)).transactionHash;
}
