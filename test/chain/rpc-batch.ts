/**
 * JSON-RPC batches for the chain tests: many reads (and node-control calls) in one HTTP request, so a
 * property fuzz of thousands of steps stays fast. Each call's outcome is kept apart: a reverted
 * eth_call is an outcome (with its revert data), not an exception.
 */
import { type Abi, type Address, decodeFunctionResult, encodeFunctionData, type Hex } from 'viem';
import { createJsonPost } from '../../src/chain/local/rpc.ts';

export interface RpcCall {
  method: string;
  params: unknown[];
}

export type RpcOutcome = { ok: true; result: unknown } | { ok: false; error: string; data?: Hex };

export type BatchRpc = (calls: readonly RpcCall[]) => Promise<RpcOutcome[]>;

export function createBatchRpc(rpcUrl: string): BatchRpc {
  // node:http on a keep-alive agent: a fraction of fetch's CPU per call (src/chain/local/rpc.ts).
  const post = createJsonPost(rpcUrl);
  let nextId = 1;
  return async (calls) => {
    if (calls.length === 0) return [];
    const first = nextId;
    nextId += calls.length;
    const body = calls.map((c, i) => ({
      jsonrpc: '2.0',
      id: first + i,
      method: c.method,
      params: c.params,
    }));
    const res = await post(JSON.stringify(body));
    const answers = JSON.parse(res.text) as {
      id: number;
      result?: unknown;
      error?: { message: string; data?: Hex };
    }[];
    const out: RpcOutcome[] = new Array(calls.length);
    for (const a of answers) {
      out[a.id - first] = a.error
        ? { ok: false, error: a.error.message, data: a.error.data }
        : { ok: true, result: a.result };
    }
    return out;
  };
}

export type BlockTag = 'latest' | 'pending';

/** A value read by a batch: available once the batch ran. */
export interface Read<T> {
  /** The decoded value; throws when the call failed. */
  (): T;
  outcome(): RpcOutcome;
}

/** Collects reads (eth_call and raw methods), runs them in one batch, then decodes each. */
export class ReadBatch {
  private readonly calls: RpcCall[] = [];
  private outcomes: RpcOutcome[] | undefined;

  constructor(private readonly rpc: BatchRpc) {}

  raw<T = unknown>(method: string, params: unknown[], decode: (r: unknown) => T = (r) => r as T) {
    const index = this.calls.push({ method, params }) - 1;
    const outcome = (): RpcOutcome => {
      const o = this.outcomes?.[index];
      if (!o) throw new Error(`read ${method} before its batch ran`);
      return o;
    };
    const read = (() => {
      const o = outcome();
      if (!o.ok) throw new Error(`${method} failed: ${o.error}`);
      return decode(o.result);
    }) as Read<T>;
    read.outcome = outcome;
    return read;
  }

  /** eth_call of a view (or a simulated write, from `from`) at `block`. */
  call<T = bigint>(
    to: Address,
    abi: Abi,
    functionName: string,
    args: readonly unknown[] = [],
    opts: { block?: BlockTag; from?: Address } = {},
  ): Read<T> {
    const data = encodeFunctionData({ abi, functionName, args } as never);
    return this.raw(
      'eth_call',
      [{ to, data, ...(opts.from ? { from: opts.from } : {}) }, opts.block ?? 'latest'],
      (r) => decodeFunctionResult({ abi, functionName, data: r as Hex } as never) as T,
    );
  }

  async run(): Promise<void> {
    this.outcomes = await this.rpc(this.calls);
  }
}
