/**
 * An account whose key lives in another process: a remote signer answering JSON-RPC
 * `eth_signTransaction` (Web3Signer's and Clef's interface; a KMS- or HSM-backed signer exposes the
 * same). The service sends the transaction it wants signed and gets the signed bytes back; the key
 * never enters this process. Every answer is checked before it is used: signed by the configured
 * address, and the very transaction that was asked for (a signer that changed the recipient, data,
 * nonce or fees is refused, not broadcast).
 */

import {
  type Address,
  type Hex,
  isAddressEqual,
  type LocalAccount,
  parseTransaction,
  recoverTransactionAddress,
  type TransactionSerializable,
  toHex,
} from 'viem';
import { toAccount } from 'viem/accounts';
import { BaseError, type BaseErrorOptions } from '../errors.ts';

export class RemoteSignerError extends BaseError<'remote_signer_failed'> {
  override name = 'RemoteSignerError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('remote_signer_failed', message, options);
  }
}

const TIMEOUT_MS = 10_000;

function hexOf(v: bigint | number | undefined): Hex | undefined {
  return v === undefined ? undefined : toHex(v);
}

/** The signer's JSON-RPC call; its URL (which may carry credentials) is never in an error. */
async function call(url: string, method: string, params: unknown[]): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new RemoteSignerError(
      `remote signer unreachable (${err instanceof Error ? err.name : 'error'}): check that it runs and the signer URL`,
    );
  }
  const body = (await res.json().catch(() => undefined)) as
    | { result?: unknown; error?: { message?: string } }
    | undefined;
  if (!res.ok || !body || body.error || body.result === undefined) {
    const why = body?.error?.message ?? `HTTP ${res.status}`;
    throw new RemoteSignerError(`remote signer refused ${method}: ${why}`);
  }
  return body.result;
}

/** Web3Signer answers the raw transaction; Clef answers `{ raw, tx }`. */
function rawOf(result: unknown): Hex {
  const raw = typeof result === 'string' ? result : (result as { raw?: unknown } | null)?.raw;
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]+$/.test(raw)) {
    throw new RemoteSignerError('remote signer answered no signed transaction');
  }
  return raw as Hex;
}

/** The fields that decide what a transaction does and costs; each must come back unchanged. */
function sameTransaction(asked: TransactionSerializable, got: TransactionSerializable): boolean {
  const eq = (a: unknown, b: unknown) => (a ?? undefined) === (b ?? undefined);
  const lower = (a: unknown) => (typeof a === 'string' ? a.toLowerCase() : a);
  return (
    eq(asked.nonce, got.nonce) &&
    eq(lower(asked.to), lower(got.to)) &&
    eq(lower(asked.data ?? '0x'), lower(got.data ?? '0x')) &&
    eq(asked.value ?? 0n, got.value ?? 0n) &&
    eq(asked.gas, got.gas) &&
    eq(asked.maxFeePerGas, got.maxFeePerGas) &&
    eq(asked.maxPriorityFeePerGas, got.maxPriorityFeePerGas) &&
    eq(asked.chainId, got.chainId)
  );
}

/** An account signing EIP-1559 transactions through the remote signer at `url` for `address`. */
export function remoteSignerAccount(url: string, address: Address): LocalAccount {
  return toAccount({
    address,
    async signTransaction(tx) {
      const t = tx as TransactionSerializable;
      const raw = rawOf(
        await call(url, 'eth_signTransaction', [
          {
            from: address,
            to: t.to ?? undefined,
            data: t.data ?? '0x',
            value: hexOf(t.value ?? 0n),
            gas: hexOf(t.gas),
            nonce: hexOf(t.nonce),
            maxFeePerGas: hexOf(t.maxFeePerGas),
            maxPriorityFeePerGas: hexOf(t.maxPriorityFeePerGas),
            chainId: hexOf(t.chainId),
            type: '0x2',
          },
        ]),
      );
      let signer: Address;
      let parsed: TransactionSerializable;
      try {
        parsed = parseTransaction(raw) as TransactionSerializable;
        signer = await recoverTransactionAddress({ serializedTransaction: raw as never });
      } catch {
        throw new RemoteSignerError(
          'remote signer answered bytes that are not a signed transaction',
        );
      }
      if (!isAddressEqual(signer, address)) {
        throw new RemoteSignerError(
          `remote signer signed with ${signer}, not the configured ${address}: check signer.address`,
        );
      }
      if (!sameTransaction(t, parsed)) {
        throw new RemoteSignerError('remote signer changed the transaction it was asked to sign');
      }
      return raw;
    },
    async signMessage() {
      throw new RemoteSignerError('the service signs transactions only');
    },
    async signTypedData() {
      throw new RemoteSignerError('the service signs transactions only');
    },
  });
}

/** Whether the signer at `url` holds `address` (eth_accounts), for a check at startup. */
export async function remoteSignerHolds(url: string, address: Address): Promise<boolean> {
  const accounts = await call(url, 'eth_accounts', []);
  return (
    Array.isArray(accounts) &&
    accounts.some((a) => typeof a === 'string' && isAddressEqual(a as Address, address))
  );
}
