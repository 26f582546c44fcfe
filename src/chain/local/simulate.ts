/**
 * Simulated history: day by day from `historyStartTimestamp`, two blocks a day (08:xx and 18:xx
 * UTC). Yield rates take a random walk; users deposit in the morning and redeem (or request, on async
 * engines) in the evening; settled async requests are claimed the morning after they mature.
 * Scheduled events, placed at fixed fractions of the history so short histories have them too:
 *   - every `active` sync engine is paused, then resumed two days later;
 *   - the sync vault halts deposits upstream for one day, and realises a 0.4 % loss once;
 *   - each `deprecated` engine is deprecated; each `paused` engine is paused for good.
 * All choices come from one seeded PRNG, and amounts are bigints: the same seed, the same chain.
 */
import { type Address, encodeFunctionData, type Hex } from 'viem';
import type { ChainClient } from '../client.ts';
import { yieldEngineAbi, yieldVaultAbi } from '../generated/index.ts';
import { LOCAL_ROLES } from './accounts.ts';
import type { BlockBuilder } from './block-builder.ts';
import type { LocalContracts, LocalEngine } from './deploy-local.ts';
import {
  ASYNC_SETTLEMENT_DELAY_SECONDS,
  INITIAL_ASYNC_APR_BPS,
  INITIAL_SYNC_APR_BPS,
  USD,
} from './deploy-local.ts';
import { createPrng, type Prng } from './prng.ts';
import { aprBpsToRatePerSecond } from './rates.ts';

export const DAY = 86_400;

export interface SimulateOptions {
  seed: string;
  days: number;
  /** 00:00 UTC of the first simulated day. */
  historyStartTimestamp: number;
}

export interface SimulationResult {
  transactions: number;
  blocks: number;
  lastBlock: bigint;
  lastTimestamp: number;
  /** Per engine address: users holding shares at the end. */
  holders: Map<Address, Address[]>;
}

interface PendingRequest {
  engine: LocalEngine;
  requestId: bigint;
  controller: Address;
  claimDay: number;
}

export interface Schedule {
  pauseActive: number;
  resumeActive: number;
  upstreamHalt: number;
  loss: number;
  deprecate: number;
  pauseForGood: number;
}

/** Never: a day no history reaches. */
const NEVER = -1;

/**
 * The day of each scripted operator event, scaled to the history's length. Whatever the length, the
 * products end in their demo statuses: the active product's pause is lifted (the same day in a
 * 2-day history), and the upstream halt (lifted the next day) happens only when a next day exists,
 * so the sync products do not end paused by it.
 */
export function schedule(days: number): Schedule {
  const at = (f: number) => Math.min(days - 1, Math.max(1, Math.floor(days * f)));
  return {
    pauseActive: at(0.4),
    resumeActive: Math.min(days - 1, at(0.4) + 2),
    upstreamHalt: at(0.55) < days - 1 ? at(0.55) : NEVER,
    loss: at(0.5),
    deprecate: at(0.7),
    pauseForGood: at(0.85),
  };
}

/** Daily random walk of an annual rate within [150, 1400] bps, with rare regime jumps. */
function walkRate(prng: Prng, bps: number): number {
  let next = bps + prng.int(-35, 35);
  if (prng.chance(0.03)) next += prng.int(-250, 250);
  return Math.min(1400, Math.max(150, next));
}

function depositAmount(prng: Prng): bigint {
  if (prng.chance(0.04)) return prng.bigint(100_000n, 600_000n) * USD; // occasional whale
  return prng.bigint(50n, 25_000n) * USD + prng.bigint(0n, USD - 1n);
}

export async function simulateHistory(
  builder: BlockBuilder,
  publicClient: ChainClient,
  contracts: LocalContracts,
  options: SimulateOptions,
): Promise<SimulationResult> {
  const prng = createPrng(`history:${options.seed}`);
  const when = schedule(options.days);
  const deployer = LOCAL_ROLES.deployer;
  let transactions = 0;
  let blocks = 0;
  let lastBlock = 0n;

  const send = async (from: Address, to: Address, data: Hex, label: string) => {
    await builder.send({ from, to, data, label });
    transactions++;
  };
  const call = (engine: LocalEngine, functionName: 'pause' | 'unpause' | 'deprecate') =>
    send(
      deployer,
      engine.address,
      encodeFunctionData({ abi: yieldEngineAbi, functionName }),
      `${functionName} ${engine.product.slug}`,
    );
  const mine = async (timestamp: number) => {
    const block = await builder.mine(timestamp);
    blocks++;
    lastBlock = block.number;
  };

  // Each engine has its own clientele (3 to 5 users), fixed for the whole history.
  const clientele = new Map<Address, Address[]>();
  for (const engine of contracts.engines) {
    const users = [...LOCAL_ROLES.users];
    const count = prng.int(3, 5);
    const chosen: Address[] = [];
    for (let i = 0; i < count; i++) chosen.push(users.splice(prng.int(0, users.length - 1), 1)[0]!);
    clientele.set(engine.address, chosen);
  }

  const pausedNow = new Set<Address>();
  const deprecatedNow = new Set<Address>();
  const nextRequestId = new Map<Address, bigint>();
  let pending: PendingRequest[] = [];
  let syncApr = INITIAL_SYNC_APR_BPS;
  let asyncApr = INITIAL_ASYNC_APR_BPS;
  let upstreamHalted = false;

  for (let day = 0; day < options.days; day++) {
    const dayStart = options.historyStartTimestamp + day * DAY;

    // ---- morning block: rates, operator events, claims, deposits
    syncApr = walkRate(prng, syncApr);
    asyncApr = walkRate(prng, asyncApr);
    for (const [vault, apr] of [
      [contracts.syncVault.address, syncApr],
      [contracts.asyncVault.address, asyncApr],
    ] as const) {
      await send(
        deployer,
        vault,
        encodeFunctionData({
          abi: yieldVaultAbi,
          functionName: 'setRatePerSecond',
          args: [aprBpsToRatePerSecond(apr)],
        }),
        `rate ${vault} ${apr}`,
      );
    }
    if (day === when.upstreamHalt || (upstreamHalted && day === when.upstreamHalt + 1)) {
      upstreamHalted = day === when.upstreamHalt;
      await send(
        deployer,
        contracts.syncVault.address,
        encodeFunctionData({
          abi: yieldVaultAbi,
          functionName: 'setPaused',
          args: [upstreamHalted],
        }),
        `upstream halt ${upstreamHalted}`,
      );
    }
    if (day === when.loss) {
      const total = await publicClient.readContract({
        address: contracts.syncVault.address,
        abi: yieldVaultAbi,
        functionName: 'totalAssets',
      });
      await send(
        deployer,
        contracts.syncVault.address,
        encodeFunctionData({
          abi: yieldVaultAbi,
          functionName: 'realizeLoss',
          args: [(total * 40n) / 10_000n],
        }),
        'upstream loss',
      );
    }
    for (const engine of contracts.engines) {
      const { key } = engine.product;
      if (key === 'active' && day === when.pauseActive) {
        await call(engine, 'pause');
        pausedNow.add(engine.address);
      }
      if (key === 'active' && day === when.resumeActive && pausedNow.has(engine.address)) {
        await call(engine, 'unpause');
        pausedNow.delete(engine.address);
      }
      if (key === 'deprecated' && day === when.deprecate) {
        await call(engine, 'deprecate');
        deprecatedNow.add(engine.address);
      }
      if (key === 'paused' && day === when.pauseForGood) {
        await call(engine, 'pause');
        pausedNow.add(engine.address);
      }
    }
    const due = pending.filter((r) => r.claimDay <= day);
    pending = pending.filter((r) => r.claimDay > day);
    for (const r of due) {
      await send(
        r.controller,
        r.engine.address,
        encodeFunctionData({
          abi: yieldEngineAbi,
          functionName: 'claimRedeem',
          args: [r.requestId, r.controller],
        }),
        `claim ${r.engine.product.slug} #${r.requestId}`,
      );
    }
    for (const engine of contracts.engines) {
      const closed =
        pausedNow.has(engine.address) ||
        deprecatedNow.has(engine.address) ||
        (upstreamHalted && engine.product.vaultKind === 'sync');
      if (closed) continue;
      const users = clientele.get(engine.address)!;
      // Day 0: everyone opens a position so each engine has holders and logs from the start.
      const depositors =
        day === 0
          ? users
          : prng.chance(0.55)
            ? [prng.pick(users)].concat(prng.chance(0.3) ? [prng.pick(users)] : [])
            : [];
      for (const user of depositors) {
        await send(
          user,
          engine.address,
          encodeFunctionData({
            abi: yieldEngineAbi,
            functionName: 'deposit',
            args: [depositAmount(prng), user],
          }),
          `deposit ${engine.product.slug} ${user}`,
        );
      }
    }
    await mine(dayStart + 8 * 3600 + prng.int(0, 3599));

    // ---- evening block: exits, sized from the balances after the morning block
    const exits: { engine: LocalEngine; user: Address; fraction: bigint }[] = [];
    for (const engine of contracts.engines) {
      if (day === 0) continue;
      const leaving = deprecatedNow.has(engine.address);
      if (!prng.chance(leaving ? 0.3 : 0.35)) continue;
      const user = prng.pick(clientele.get(engine.address)!);
      // Fraction in basis points; deprecated engines see more full exits, but some holders stay.
      const fraction = prng.chance(leaving ? 0.4 : 0.1) ? 10_000n : BigInt(prng.int(500, 6000));
      exits.push({ engine, user, fraction });
    }
    const balances = await Promise.all(
      exits.map(({ engine, user }) =>
        publicClient.readContract({
          address: engine.address,
          abi: yieldEngineAbi,
          functionName: 'balanceOf',
          args: [user],
        }),
      ),
    );
    for (const [i, { engine, user, fraction }] of exits.entries()) {
      // The first client of the engine that ends deprecated never leaves entirely (before or after
      // the deprecation): the demo always has a wallet holding a position in an exit-only product
      // (a case partners must render).
      const keeps =
        engine.product.status === 'deprecated' && user === clientele.get(engine.address)![0];
      const shares = (balances[i]! * (keeps ? minBig(fraction, 5_000n) : fraction)) / 10_000n;
      if (shares === 0n) continue;
      if (engine.product.vaultKind === 'async') {
        await send(
          user,
          engine.address,
          encodeFunctionData({
            abi: yieldEngineAbi,
            functionName: 'requestRedeem',
            args: [shares, user, user],
          }),
          `requestRedeem ${engine.product.slug} ${user}`,
        );
        const requestId = nextRequestId.get(engine.address) ?? 1n;
        nextRequestId.set(engine.address, requestId + 1n);
        // Requested at ~18:00, claimable a settlement delay later, claimed the next morning after.
        const claimDay = day + 1 + Math.ceil(ASYNC_SETTLEMENT_DELAY_SECONDS / DAY);
        pending.push({ engine, requestId, controller: user, claimDay });
      } else {
        await send(
          user,
          engine.address,
          encodeFunctionData({
            abi: yieldEngineAbi,
            functionName: 'redeem',
            args: [shares, user, user],
          }),
          `redeem ${engine.product.slug} ${user}`,
        );
      }
    }
    await mine(dayStart + 18 * 3600 + prng.int(0, 3599));
  }

  const holders = new Map<Address, Address[]>();
  const pairs = contracts.engines.flatMap((engine) =>
    clientele.get(engine.address)!.map((user) => ({ engine, user })),
  );
  const finalBalances = await Promise.all(
    pairs.map(({ engine, user }) =>
      publicClient.readContract({
        address: engine.address,
        abi: yieldEngineAbi,
        functionName: 'balanceOf',
        args: [user],
      }),
    ),
  );
  for (const [i, { engine, user }] of pairs.entries()) {
    const list = holders.get(engine.address) ?? [];
    if (finalBalances[i]! > 0n) list.push(user);
    holders.set(engine.address, list);
  }
  return { transactions, blocks, lastBlock, lastTimestamp: builder.timestamp, holders };
}

function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
