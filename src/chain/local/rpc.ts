/**
 * A bare JSON-RPC request function for node-control methods (anvil_*, evm_*) and for unlocked-account
 * `eth_sendTransaction`, which the simulator sends by the thousand without viem's per-call preparation.
 */
import { http } from 'viem';

export type RpcRequest = (method: string, params?: readonly unknown[]) => Promise<unknown>;

export function createRpc(rpcUrl: string): RpcRequest {
  const transport = http(rpcUrl, { retryCount: 0, timeout: 120_000 })({});
  // viem's transport request is typed per known schema; node-control methods are outside it.
  const request = transport.request as (args: {
    method: string;
    params?: readonly unknown[];
  }) => Promise<unknown>;
  return (method, params = []) => request({ method, params });
}
