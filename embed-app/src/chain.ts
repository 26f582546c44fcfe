/**
 * Contract calls through the user's EIP-1193 provider: reads by `eth_call`, writes by
 * `eth_sendTransaction` (the wallet signs; the embed never holds a key) with the gas limit of
 * gas.ts, then the receipt by polling. Encoding and decoding by viem.
 */
import {
  type Abi,
  type Address,
  type ContractFunctionName,
  decodeEventLog,
  decodeFunctionResult,
  encodeEventTopics,
  encodeFunctionData,
  type Hex,
  numberToHex,
  pad,
} from 'viem';
import { engineAbi } from '../../packages/sdk/src/generated/engine-abi.ts';
import { gasLimit } from './gas.ts';
import type { Eip1193Provider } from './wallet.ts';

export interface Receipt {
  status: 'success' | 'reverted';
  transactionHash: Hex;
  blockNumber: bigint;
  logs: Array<{ address: Address; topics: Hex[]; data: Hex }>;
}

export class RevertedError extends Error {
  constructor(readonly txHash: Hex) {
    super('reverted');
  }
}

export function chainAccess(provider: Eip1193Provider, account: Address) {
  const rpc = <T>(method: string, params: unknown[]) =>
    provider.request({ method, params }) as Promise<T>;

  async function read<const A extends Abi>(
    to: Address,
    abi: A,
    functionName: ContractFunctionName<A, 'view'>,
    args: readonly unknown[] = [],
  ): Promise<unknown> {
    // biome-ignore lint/suspicious/noExplicitAny: viem's generic narrowing needs the exact literal
    const data = encodeFunctionData({ abi, functionName, args } as any);
    const result = await rpc<Hex>('eth_call', [{ to, data, from: account }, 'latest']);
    // biome-ignore lint/suspicious/noExplicitAny: as above
    return decodeFunctionResult({ abi, functionName, data: result } as any);
  }

  async function write<const A extends Abi>(
    to: Address,
    abi: A,
    functionName: ContractFunctionName<A, 'nonpayable'>,
    args: readonly unknown[],
  ): Promise<Hex> {
    // biome-ignore lint/suspicious/noExplicitAny: as above
    const data = encodeFunctionData({ abi, functionName, args } as any);
    // Estimated now, after the previous step is mined (a deposit cannot be estimated before the
    // approve it spends); a call that would revert fails here, before the wallet asks the user.
    const estimate = BigInt(await rpc<Hex>('eth_estimateGas', [{ from: account, to, data }]));
    const gas = numberToHex(gasLimit(estimate));
    return rpc<Hex>('eth_sendTransaction', [{ from: account, to, data, gas }]);
  }

  async function receipt(hash: Hex, intervalMs = 500): Promise<Receipt> {
    for (;;) {
      const r = await rpc<{
        status: Hex;
        transactionHash: Hex;
        blockNumber: Hex;
        logs: Receipt['logs'];
      } | null>('eth_getTransactionReceipt', [hash]);
      if (r) {
        const out: Receipt = {
          status: r.status === '0x1' ? 'success' : 'reverted',
          transactionHash: r.transactionHash,
          blockNumber: BigInt(r.blockNumber),
          logs: r.logs,
        };
        if (out.status === 'reverted') throw new RevertedError(hash);
        return out;
      }
      await new Promise((res) => setTimeout(res, intervalMs));
    }
  }

  return {
    account,
    /** The wallet itself, for the deposit ladder (packages/sdk/src/engine/ladder.ts). */
    provider,
    read,
    write,
    receipt,
    chainId: async () => Number(await rpc<Hex>('eth_chainId', [])),
    async blockTime(): Promise<number> {
      const b = await rpc<{ timestamp: Hex }>('eth_getBlockByNumber', ['latest', false]);
      return Number(BigInt(b.timestamp));
    },
    /** The user's redeem request ids on an engine (RedeemRequested with them as controller). */
    async redeemRequestIds(engine: Address, fromBlock: bigint): Promise<bigint[]> {
      const topics = encodeEventTopics({
        abi: engineAbi,
        eventName: 'RedeemRequested',
        args: { controller: account },
      });
      const logs = await rpc<Array<{ topics: Hex[]; data: Hex }>>('eth_getLogs', [
        {
          address: engine,
          fromBlock: numberToHex(fromBlock),
          toBlock: 'latest',
          topics: [topics[0], pad(account.toLowerCase() as Hex)],
        },
      ]);
      return logs.map((l) => {
        const e = decodeEventLog({ abi: engineAbi, data: l.data, topics: l.topics as [Hex] });
        return (e.args as { requestId: bigint }).requestId;
      });
    },
    /** An event of the engine in a receipt, decoded. */
    engineEvent(r: Receipt, engine: Address, name: 'Deposit' | 'RedeemRequested') {
      for (const l of r.logs) {
        if (l.address.toLowerCase() !== engine.toLowerCase()) continue;
        try {
          const e = decodeEventLog({ abi: engineAbi, data: l.data, topics: l.topics as [Hex] });
          if (e.eventName === name) return e.args as Record<string, unknown>;
        } catch {
          // another event of the engine
        }
      }
      return undefined;
    },
  };
}

export type ChainAccess = ReturnType<typeof chainAccess>;
