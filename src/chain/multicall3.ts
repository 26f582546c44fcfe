/**
 * Multicall3 (github.com/mds1/multicall): one contract at the same address on nearly every EVM
 * chain, whose `aggregate3` runs many view calls in one `eth_call`. With it, the reads of many
 * products at one block (statuses, fees, the health endpoint's figures, a day's boundary reads) cost
 * one provider call instead of one per read: viem's client gathers the calls made together and
 * sends them as one (src/chain/client.ts, `multicall3`).
 *
 * The local chain gets contracts/Multicall3.sol (its `aggregate3`, the call viem makes) at the
 * canonical address, put there before anything else is deployed (so reads at every later block can
 * use it). A configured chain is checked at start: where the contract is missing, reads go one
 * call each, as before; where the check fails (the provider down), it is made again in the
 * background until it answers (src/sync/chain-runtime.ts).
 */
import type { Address, Hex } from 'viem';
import type { ChainClient } from './client.ts';
import { multicall3Bytecode } from './generated/Multicall3.ts';
import type { RpcRequest } from './local/rpc.ts';

export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11';

/** Where Multicall3 is on a chain, and from which block (reads at older blocks go one by one). */
export interface Multicall3 {
  address: Address;
  blockCreated: number;
}

/** The block Multicall3 was created at on well-known networks (the blocks viem's chains name). */
const CREATED_AT: Readonly<Record<number, number>> = {
  1: 14_353_601, // Ethereum
  10: 4_286_263, // OP Mainnet
  137: 25_770_160, // Polygon PoS
  8453: 5022, // Base
  42161: 7_654_707, // Arbitrum One
  11155111: 751_532, // Sepolia
  84532: 1_059_647, // Base Sepolia
};

/**
 * Multicall3 on a configured chain, or undefined when the chain has no code at its address. Its
 * creation block comes from `blockCreated` (CHAINS_FILE `multicall3_block`), the table above, or 0.
 */
export async function findMulticall3(
  client: ChainClient,
  chainId: number,
  blockCreated?: number,
): Promise<Multicall3 | undefined> {
  const code = await client.getCode({ address: MULTICALL3_ADDRESS });
  if (!code || code === '0x') return undefined;
  return { address: MULTICALL3_ADDRESS, blockCreated: blockCreated ?? CREATED_AT[chainId] ?? 0 };
}

/**
 * Puts contracts/Multicall3.sol's runtime code at the canonical address on an anvil node
 * (`anvil_setCode`; the runtime is what the creation code returns when run). Returns the block from
 * which it is there (the node's current block).
 */
export async function installMulticall3(rpc: RpcRequest): Promise<number> {
  const runtime = (await rpc('eth_call', [{ data: multicall3Bytecode }, 'latest'])) as Hex;
  await rpc('anvil_setCode', [MULTICALL3_ADDRESS, runtime]);
  return Number(BigInt((await rpc('eth_blockNumber', [])) as Hex));
}

/**
 * Multicall3 on a local chain: the contract as this build compiles it, put (again) at its address
 * when the saved chain has none or an older one. Reads at blocks from before it was first put
 * there go one call each (`blockCreated`).
 */
export async function ensureLocalMulticall3(rpc: RpcRequest): Promise<Multicall3> {
  const [runtime, code] = (await Promise.all([
    rpc('eth_call', [{ data: multicall3Bytecode }, 'latest']),
    rpc('eth_getCode', [MULTICALL3_ADDRESS, 'latest']),
  ])) as [Hex, Hex];
  if (code === runtime) return { address: MULTICALL3_ADDRESS, blockCreated: 0 };
  await rpc('anvil_setCode', [MULTICALL3_ADDRESS, runtime]);
  const now = Number(BigInt((await rpc('eth_blockNumber', [])) as Hex));
  // Built before any Multicall3: from now on. An older Multicall3 was there from the start.
  return { address: MULTICALL3_ADDRESS, blockCreated: code && code !== '0x' ? 0 : now };
}
