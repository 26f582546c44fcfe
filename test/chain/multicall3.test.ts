/**
 * Reads gathered into Multicall3 (contracts/Multicall3.sol at the canonical address, as the local
 * chain has it): the same answers as reads one call each, in one eth_call; getBalance (which viem
 * sends as Multicall3's getEthBalance) included; and reads at a block from before Multicall3 was
 * there go one call each. Counted through a JSON-RPC proxy in front of a real anvil.
 */
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { yieldEngineAbi } from '../../src/chain/generated/index.ts';
import { ensureLocalMulticall3, MULTICALL3_ADDRESS } from '../../src/chain/multicall3.ts';
import { clientWithMulticall } from '../../src/sync/chain-runtime.ts';
import { captureLogger } from '../helpers/logs.ts';
import { type ProviderProxy, startProviderProxy } from '../helpers/provider-proxy.ts';
import { type Fixture, mineBlock, newEngine, OPERATOR, setupFixture } from './helpers.ts';

let fx: Fixture;
let proxy: ProviderProxy;
beforeAll(async () => {
  fx = await setupFixture();
  proxy = await startProviderProxy(fx.anvil.rpcUrl);
});
afterAll(async () => {
  await proxy?.close();
  await fx?.stop();
});

describe('Multicall3', () => {
  it('gathers concurrent reads into one call with the same answers', async () => {
    const engines: Address[] = [
      await newEngine(fx, fx.syncVault),
      await newEngine(fx, fx.asyncVault),
    ];
    const before = BigInt((await fx.rpc('eth_blockNumber', [])) as string);
    const multicall3 = await ensureLocalMulticall3(fx.rpc);
    expect(multicall3.address).toBe(MULTICALL3_ADDRESS);
    expect(BigInt(multicall3.blockCreated)).toBeGreaterThanOrEqual(before);
    // Already this build's contract: nothing to put there again, and its block stays.
    await mineBlock(fx);
    const endpoint = { chainId: fx.anvil.chainId, rpcUrls: [proxy.url] };
    const plain = createChainClient(endpoint);
    const gathered = createChainClient(endpoint, { multicall3 });

    const reads = (client: typeof plain) =>
      Promise.all([
        ...engines.flatMap((address) =>
          (['totalAssets', 'totalSupply', 'paused', 'serviceFeeBps'] as const).map((functionName) =>
            client.readContract({ address, abi: yieldEngineAbi, functionName }),
          ),
        ),
        client.getBalance({ address: OPERATOR }),
      ]);
    proxy.resetCounts();
    const one = await reads(plain);
    const callsEach = proxy.calls.get('eth_call') ?? 0;
    proxy.resetCounts();
    const all = await reads(gathered);
    expect(all).toEqual(one);
    expect(callsEach).toBe(8);
    expect(proxy.calls.get('eth_call')).toBe(1);
    expect(proxy.calls.get('eth_getBalance') ?? 0).toBe(0); // asked inside the multicall

    // At a block from before Multicall3 was there, the reads go one by one and still answer.
    proxy.resetCounts();
    const old = await gathered.readContract({
      address: engines[0]!,
      abi: yieldEngineAbi,
      functionName: 'totalSupply',
      blockNumber: before,
    });
    expect(old).toBe(0n);
    expect(proxy.calls.get('eth_call')).toBe(1);
  });

  it('splits many concurrent calls into HTTP batches a provider accepts', async () => {
    // A provider that refuses a batch of more than 100 calls as a whole (anvil does so past 2 MB):
    // 601 distinct calls made together, as a day's flows are (headers, per-block reads, logs), all answer.
    proxy.set({ maxBatch: 100 });
    try {
      const client = createChainClient({ chainId: fx.anvil.chainId, rpcUrls: [proxy.url] });
      proxy.resetCounts();
      const refusedBefore = proxy.stats.batchRefusals;
      const balances = await Promise.all(
        Array.from({ length: 601 }, (_, i) =>
          client.getBalance({ address: `0x${(i + 1).toString(16).padStart(40, '0')}` }),
        ),
      );
      expect(balances).toHaveLength(601);
      expect(balances.every((v) => typeof v === 'bigint')).toBe(true);
      expect(proxy.calls.get('eth_getBalance')).toBe(601);
      expect(proxy.stats.batchRefusals).toBe(refusedBefore);
    } finally {
      proxy.set({ maxBatch: null });
    }
  });

  it('a provider failing at start: reads go one call each, then gathered again once a later check answers', async () => {
    const engine = await newEngine(fx, fx.syncVault);
    await ensureLocalMulticall3(fx.rpc);
    await mineBlock(fx);
    const { logger, lines } = captureLogger();
    const chain = {
      chainId: fx.anvil.chainId,
      name: 'blip',
      rpcUrls: [proxy.url],
      confirmationDepth: 2,
      blockRangeLimit: 1000,
      evm: true,
    };
    proxy.set({ serverErrorShare: 1 });
    let runtime: Awaited<ReturnType<typeof clientWithMulticall>>;
    try {
      runtime = await clientWithMulticall(chain, logger, { recheckDelaysMs: [200] });
    } finally {
      proxy.set({ serverErrorShare: 0 });
    }
    try {
      const read = () =>
        Promise.all(
          (['totalAssets', 'totalSupply'] as const).map((functionName) =>
            runtime.client.readContract({ address: engine, abi: yieldEngineAbi, functionName }),
          ),
        );
      // Truthful: the check failed; nothing claims the chain lacks the contract.
      expect(lines().join('\n')).toContain('could not check for Multicall3 at start');
      expect(lines().join('\n')).not.toContain('no Multicall3 on this chain');
      // Within a few checks the client in use gathers reads into one eth_call.
      const deadline = Date.now() + 20_000;
      let calls = 0;
      do {
        await new Promise((r) => setTimeout(r, 100));
        proxy.resetCounts();
        await read();
        calls = proxy.calls.get('eth_call') ?? 0;
      } while (calls !== 1 && Date.now() < deadline);
      expect(calls).toBe(1);
      expect(lines().join('\n')).toContain('Multicall3 found on a later check');
    } finally {
      runtime.stop();
    }
  });
});
