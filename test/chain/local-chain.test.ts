/**
 * The local chain: the 200-day build within 60 s and its reload, the demo manifest, final on-chain
 * statuses, logs for every engine, and determinism (two fresh builds with one seed and a fixed
 * genesis give the same addresses, logs and block hashes).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Address, decodeEventLog } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../../src/chain/client.ts';
import { yieldEngineAbi } from '../../src/chain/generated/index.ts';
import { DEV_ADDRESSES, DEV_MNEMONIC } from '../../src/chain/local/accounts.ts';
import { startAnvil } from '../../src/chain/local/anvil.ts';
import { buildLocalChain } from '../../src/chain/local/build.ts';
import {
  allDemoProducts,
  DEMO_PARTNERS,
  PRODUCT_KEYS,
} from '../../src/chain/local/demo-manifest.ts';
import type { LocalDeployment } from '../../src/chain/local/deployment.ts';
import { ensureLocalChain } from '../../src/chain/local/ensure.ts';
import { isStateUnavailable } from '../../src/chain/state-unavailable.ts';
import { readUnderlyingEstimate } from '../../src/sync/metrics/underlying-estimate.ts';

const dirs: string[] = [];
/** A day in the middle of the simulated history (UTC date). */
const midDay = (d: LocalDeployment) =>
  new Date((d.historyStartTimestamp + 100 * 86_400) * 1000).toISOString().slice(0, 10);
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('demo manifest', () => {
  it('names dev accounts that the default mnemonic derives', () => {
    for (const i of [0, 1, 2, 3, 4, 11, 19]) {
      expect(mnemonicToAccount(DEV_MNEMONIC, { addressIndex: i }).address).toBe(DEV_ADDRESSES[i]);
    }
  });

  it('has two partners with live and test products under every key, unique slugs', () => {
    expect(DEMO_PARTNERS.map((p) => p.name)).toEqual(['Acme Wallet', 'Bravo Pay']);
    for (const p of DEMO_PARTNERS) {
      for (const env of ['live', 'test'] as const) {
        expect(Object.keys(p.environments[env]).sort()).toEqual([...PRODUCT_KEYS].sort());
      }
    }
    const slugs = allDemoProducts().map((p) => p.slug);
    expect(new Set(slugs).size).toBe(20);
    expect(slugs).toContain('acme-live-usdc-core');
  });
});

interface LogLine {
  address: Address;
  block: bigint;
  eventName: string;
  args: string;
}

async function history(d: LocalDeployment): Promise<{ logs: LogLine[]; hashes: string[] }> {
  const client = createChainClient(endpointOf(d.rpcUrl, d.chainId), LOCAL_NODE_CLIENT);
  const engines = Object.values(d.engines).map((e) => e.address);
  // In four ranges: the whole history's logs in one response come near viem's 10 MiB body limit
  // (since #28 a claim also logs its request fee).
  const end = BigInt(d.historyEndBlock);
  const step = end / 4n + 1n;
  const raw = [];
  for (let from = 0n; from <= end; from += step) {
    const to = from + step - 1n < end ? from + step - 1n : end;
    raw.push(...(await client.getLogs({ address: engines, fromBlock: from, toBlock: to })));
  }
  const logs = raw.map((l) => {
    const e = decodeEventLog({ abi: yieldEngineAbi, data: l.data, topics: l.topics });
    return {
      address: l.address,
      block: l.blockNumber,
      eventName: e.eventName,
      args: JSON.stringify(e.args, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
    };
  });
  const latest = await client.getBlock({ blockNumber: BigInt(d.historyEndBlock) });
  return { logs, hashes: [latest.hash] };
}

async function freshBuild(seed: string, days: number, genesisTimestamp: number) {
  const anvil = await startAnvil({ genesisTimestamp });
  try {
    const d = await buildLocalChain({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      seed,
      days,
      genesisTimestamp,
    });
    return { d, h: await history(d) };
  } finally {
    await anvil.stop();
  }
}

describe('local chain', () => {
  it('is deterministic: same seed and genesis → same addresses, logs and block hashes', async () => {
    const genesis = 1_767_222_000; // 2025-12-31T23:00:00Z
    const a = await freshBuild('determinism', 30, genesis);
    const b = await freshBuild('determinism', 30, genesis);
    const strip = (d: LocalDeployment) => ({ ...d, rpcUrl: '', timings: undefined });
    expect(strip(b.d)).toEqual(strip(a.d));
    expect(b.h.logs).toEqual(a.h.logs);
    expect(b.h.hashes).toEqual(a.h.hashes);
    expect(a.h.logs.length).toBeGreaterThan(100);
    const c = await freshBuild('another-seed', 30, genesis);
    expect(c.d.engines['acme-live-usdc-core']?.address).toBe(
      a.d.engines['acme-live-usdc-core']?.address,
    );
    expect(c.h.logs).not.toEqual(a.h.logs);
  });

  it('builds 200 days (printing the time it took), with history for every engine and the final statuses, and reloads', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'chain-test-'));
    dirs.push(dataDir);
    const built = await ensureLocalChain({ dataDir, seed: 'demo', days: 200 });
    let d = built.deployment;
    try {
      console.log(`local chain: 200 days built in ${built.seconds} s`, d.timings);
      expect(built.reloaded).toBe(false);
      // The 60 s budget is a figure to report, not an assertion: a slow machine must not fail CI.
      expect(Object.keys(d.engines)).toHaveLength(16);
      expect(Object.keys(d.pending)).toHaveLength(4);
      const { logs } = await history(d);
      const client = createChainClient(endpointOf(d.rpcUrl, d.chainId), LOCAL_NODE_CLIENT);
      for (const e of Object.values(d.engines)) {
        const names = new Set(
          logs
            .filter((l) => l.address === e.address.toLowerCase() || l.address === e.address)
            .map((l) => l.eventName),
        );
        expect(names.has('Deposit'), e.slug).toBe(true);
        expect(names.has(e.vaultKind === 'async' ? 'RedeemRequested' : 'Withdraw'), e.slug).toBe(
          true,
        );
        expect(names.has('FeesAccrued'), e.slug).toBe(true);
        const [paused, deprecated] = await Promise.all([
          client.readContract({ address: e.address, abi: yieldEngineAbi, functionName: 'paused' }),
          client.readContract({
            address: e.address,
            abi: yieldEngineAbi,
            functionName: 'deprecated',
          }),
        ]);
        expect(paused, e.slug).toBe(e.status === 'paused');
        expect(deprecated, e.slug).toBe(e.status === 'deprecated');
        if (e.status === 'active') expect(e.holders.length, e.slug).toBeGreaterThan(0);
      }
      // A day in the middle of the history is readable at its block (historical state).
      const mid = BigInt(Math.floor(d.historyEndBlock / 2));
      const core = d.engines['acme-live-usdc-core']!;
      expect(
        await client.readContract({
          address: core.address,
          abi: yieldEngineAbi,
          functionName: 'totalAssets',
          blockNumber: mid,
        }),
      ).toBeGreaterThan(0n);
    } finally {
      await built.stop();
    }
    const reloaded = await ensureLocalChain({ dataDir, seed: 'demo', days: 200 });
    try {
      console.log(`local chain: reloaded in ${reloaded.seconds} s`);
      expect(reloaded.reloaded).toBe(true);
      expect(reloaded.seconds).toBeLessThan(20);
      expect(reloaded.deployment.engines).toEqual(d.engines);
      d = reloaded.deployment;
      const client = createChainClient(endpointOf(d.rpcUrl, d.chainId), LOCAL_NODE_CLIENT);
      const core = d.engines['acme-live-usdc-core']!;
      const mid = BigInt(Math.floor(d.historyEndBlock / 2));
      expect(
        await client.readContract({
          address: core.address,
          abi: yieldEngineAbi,
          functionName: 'totalAssets',
          blockNumber: mid,
        }),
      ).toBeGreaterThan(0n);
      // The launch-day estimate reads the underlying a day back: with historical states, it has one.
      expect(
        await readUnderlyingEstimate(client, {
          vault: d.vaults.sync.address,
          day: midDay(d),
          totalFeeBps: 1500,
          hi: await client.getBlockNumber(),
        }),
      ).not.toBeNull();
    } finally {
      await reloaded.stop();
    }

    // Saved with its historical states, as the service does while the demo's history is being
    // computed; then without them, as it does afterwards: the write shrinks and stays bounded.
    const stateFile = path.join(dataDir, 'chain', 'anvil-state.json');
    const withHistory = statSync(stateFile).size;
    const third = await ensureLocalChain({ dataDir, seed: 'demo', days: 200 });
    const client3 = createChainClient(endpointOf(third.anvil.rpcUrl, d.chainId), LOCAL_NODE_CLIENT);
    const core = d.engines['acme-live-usdc-core']!;
    const headBefore = await client3.getBlockNumber();
    const assetsAtHead = await client3.readContract({
      address: core.address,
      abi: yieldEngineAbi,
      functionName: 'totalAssets',
    });
    const stopStarted = performance.now();
    await third.stop({ historicalStates: false });
    const stopSeconds = (performance.now() - stopStarted) / 1000;
    const without = statSync(stateFile).size;
    console.log(
      `local chain state: ${(withHistory / 1e6).toFixed(0)} MB with historical states, ` +
        `${(without / 1e6).toFixed(0)} MB without (saved and stopped in ${stopSeconds.toFixed(1)} s)`,
    );
    expect(without).toBeLessThan(withHistory / 3);

    const fourth = await ensureLocalChain({ dataDir, seed: 'demo', days: 200 });
    try {
      expect(fourth.deployment.stateReadableFromBlock).toBe(Number(headBefore));
      const client4 = createChainClient(
        endpointOf(fourth.anvil.rpcUrl, d.chainId),
        LOCAL_NODE_CLIENT,
      );
      // The reload mined the confirmation depth: the block the service reads at has its state.
      const head = await client4.getBlockNumber();
      expect(head).toBe(headBefore + 2n);
      const read = (blockNumber?: bigint) =>
        client4.readContract({
          address: core.address,
          abi: yieldEngineAbi,
          functionName: 'totalAssets',
          ...(blockNumber === undefined ? {} : { blockNumber }),
        });
      expect(await read(head - 2n)).toBe(assetsAtHead);
      // The underlying accrues with time: the newer blocks hold at least as much.
      expect(await read()).toBeGreaterThanOrEqual(assetsAtHead);
      // The past before the save is gone, and says so (never a wrong figure).
      const gone = await read(BigInt(Math.floor(d.historyEndBlock / 2))).catch((e: unknown) => e);
      expect(isStateUnavailable(gone)).toBe(true);
      // …and the launch-day estimate that needed it is absent rather than an error.
      expect(
        await readUnderlyingEstimate(client4, {
          vault: d.vaults.sync.address,
          day: midDay(d),
          totalFeeBps: 1500,
          hi: head,
        }),
      ).toBeNull();
    } finally {
      await fourth.stop();
    }
  }, 240_000);
});

describe('local chain port', () => {
  it('a port already taken says so and names LOCAL_CHAIN_PORT', async () => {
    // Found by QA: two services on one machine both took the default 8545, and the second said
    // only "anvil exited with code 1" and anvil's own words.
    const first = await startAnvil({});
    try {
      await expect(startAnvil({ port: first.port })).rejects.toThrow(
        `the local chain's port ${first.port} is in use (another service's local chain?): set LOCAL_CHAIN_PORT to a free port, or 0 to pick one`,
      );
    } finally {
      await first.stop();
    }
  });
});
