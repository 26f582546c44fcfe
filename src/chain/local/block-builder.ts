/**
 * Builds blocks by hand on an anvil node with automine off: queue transactions from unlocked
 * accounts, then mine them in one block at a chosen timestamp. Every block time is therefore chosen by
 * the simulator (reproducible history) and thousands of transactions cost one HTTP call each plus one
 * mine per block. Mining checks every receipt: a reverted transaction is a bug, never silent.
 */
import { type Address, getAddress, type Hash, type Hex } from 'viem';
import type { RpcRequest } from './rpc.ts';

export interface QueuedTx {
  from: Address;
  /** Absent for a contract creation. */
  to?: Address;
  data: Hex;
  gas?: bigint;
  /** Shown when the transaction fails. */
  label: string;
}

interface RpcReceipt {
  transactionHash: Hash;
  status: Hex;
  contractAddress: Address | null;
  blockNumber: Hex;
}

export interface MinedBlock {
  number: bigint;
  timestamp: number;
  /** Receipts in the order the transactions were queued. */
  receipts: { hash: Hash; label: string; contractAddress: Address | null }[];
}

const CALL_GAS = 2_000_000n;
const CREATE_GAS = 10_000_000n;

export class BlockBuilder {
  private queue: { hash: Hash; label: string }[] = [];
  private lastTimestamp = 0;

  constructor(private readonly rpc: RpcRequest) {}

  /** Stops automine so queued transactions wait for `mine`. */
  async begin(): Promise<void> {
    await this.rpc('evm_setAutomine', [false]);
    const block = (await this.rpc('eth_getBlockByNumber', ['latest', false])) as { timestamp: Hex };
    this.lastTimestamp = Number(block.timestamp);
  }

  /** Restores automine (the node then mines each transaction as it arrives). */
  async end(): Promise<void> {
    await this.rpc('evm_setAutomine', [true]);
  }

  get pending(): number {
    return this.queue.length;
  }

  get timestamp(): number {
    return this.lastTimestamp;
  }

  async send(tx: QueuedTx): Promise<Hash> {
    const gas = tx.gas ?? (tx.to ? CALL_GAS : CREATE_GAS);
    const params: Record<string, string> = {
      from: tx.from,
      data: tx.data,
      gas: `0x${gas.toString(16)}`,
    };
    if (tx.to) params.to = tx.to;
    // Sequential on purpose: the pool is FIFO, so send order is block order.
    const hash = (await this.rpc('eth_sendTransaction', [params])) as Hash;
    this.queue.push({ hash, label: tx.label });
    return hash;
  }

  /** Mines everything queued in one block at `timestamp` (seconds, strictly increasing). */
  async mine(timestamp: number): Promise<MinedBlock> {
    if (timestamp <= this.lastTimestamp) {
      throw new Error(`block time ${timestamp} is not after ${this.lastTimestamp}`);
    }
    await this.rpc('evm_setNextBlockTimestamp', [timestamp]);
    await this.rpc('evm_mine', []);
    this.lastTimestamp = timestamp;
    const block = (await this.rpc('eth_getBlockByNumber', ['latest', false])) as {
      number: Hex;
      timestamp: Hex;
    };
    const queued = this.queue;
    this.queue = [];
    const raw = queued.length
      ? ((await this.rpc('eth_getBlockReceipts', [block.number])) as RpcReceipt[])
      : [];
    const byHash = new Map(raw.map((r) => [r.transactionHash, r]));
    const receipts = queued.map(({ hash, label }) => {
      const r = byHash.get(hash);
      if (!r)
        throw new Error(`transaction "${label}" (${hash}) was not mined in block ${block.number}`);
      if (r.status !== '0x1') throw new Error(`transaction "${label}" (${hash}) reverted`);
      return {
        hash,
        label,
        contractAddress: r.contractAddress ? getAddress(r.contractAddress) : null,
      };
    });
    return { number: BigInt(block.number), timestamp: Number(block.timestamp), receipts };
  }
}
