/**
 * The chain's deployer account: it deploys engines and, as their owner, sends the operator calls
 * (pause, unpause, deprecate). Transactions are signed locally with the configured key, so the
 * worker can record a deployment's hash before broadcasting it.
 */
import {
  type Account,
  type Address,
  BaseError,
  type Chain,
  createWalletClient,
  fallback,
  type Hash,
  http,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { ChainSettings, SyncPublicClient } from '../../chain/chains.ts';
import { chainDefinition } from '../../chain/clients.ts';
import { yieldEngineAbi } from '../../chain/generated/YieldEngine.ts';

export type OperatorWallet = WalletClient<Transport, Chain, Account>;

export class OperatorError extends Error {
  override name = 'OperatorError';
}

/** The deployer's wallet on `chain`, or undefined when the chain has no deployer key configured. */
export function operatorWallet(chain: ChainSettings): OperatorWallet | undefined {
  if (!chain.deployerPrivateKey) return undefined;
  const transports = chain.rpcUrls.map((url) => http(url, { retryCount: 1, timeout: 10_000 }));
  return createWalletClient({
    account: privateKeyToAccount(chain.deployerPrivateKey),
    chain: chainDefinition(chain.chainId, chain.rpcUrls[0]!, chain.name),
    pollingInterval: 200,
    transport: transports.length === 1 ? transports[0]! : fallback(transports),
  });
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
  client: SyncPublicClient,
  engine: Address,
  call: EngineOperatorCall,
): Promise<Hash> {
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

/** The engine's pause and deprecation flags at a block (latest when absent). */
export async function readEngineFlags(
  client: SyncPublicClient,
  engine: Address,
  blockNumber?: bigint,
): Promise<{ paused: boolean; deprecated: boolean }> {
  const [paused, deprecated] = await Promise.all([
    client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'paused',
      blockNumber,
    }),
    client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'deprecated',
      blockNumber,
    }),
  ]);
  return { paused, deprecated };
}
