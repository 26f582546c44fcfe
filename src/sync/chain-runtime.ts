/**
 * The chains a process works with. CHAINS_FILE names them; without it the embedded local chain
 * (anvil, built or reloaded under DATA_DIR/chain) is the one chain, confirmation depth 2, with the
 * anvil dev account 0 (the owner of every demo engine) as its deployer.
 */

import { existsSync } from 'node:fs';
import { type Hex, toHex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { type ChainSettings, LOCAL_CHAIN_DEFAULTS, readChainsFile } from '../chain/chains.ts';
import { type ChainClient, createChainClient } from '../chain/client.ts';
import { DEV_MNEMONIC } from '../chain/local/accounts.ts';
import { DEFAULT_CHAIN_ID } from '../chain/local/anvil.ts';
import { deploymentFile, type LocalDeployment, readDeployment } from '../chain/local/deployment.ts';
import { ensureLocalChain, type LocalChain } from '../chain/local/ensure.ts';
import { createRpc } from '../chain/local/rpc.ts';
import {
  ensureLocalMulticall3,
  findMulticall3,
  MULTICALL3_ADDRESS,
  type Multicall3,
} from '../chain/multicall3.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

export interface ChainRuntime {
  chains: ChainSettings[];
  /** One public client per chain id (RPC fallback across the chain's URLs). */
  clients: Map<number, ChainClient>;
  /** The embedded chain, when no CHAINS_FILE is set. */
  local?: LocalChain;
  /**
   * Stops what this runtime started. The local chain saves its state; with `historicalStates:
   * false` without the states of past blocks (src/chain/local/ensure.ts).
   */
  stop(options?: { historicalStates?: boolean }): Promise<void>;
}

/** Private key of the anvil dev account 0 of the default mnemonic: deployer and engine owner. */
export function devDeployerKey(): Hex {
  const key = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 0 }).getHdKey().privateKey;
  if (!key) throw new Error('cannot derive the dev account key');
  return toHex(key);
}

export function localChainSettings(rpcUrl: string, chainId = DEFAULT_CHAIN_ID): ChainSettings {
  return {
    chainId,
    name: LOCAL_CHAIN_DEFAULTS.name,
    rpcUrls: [rpcUrl],
    confirmationDepth: LOCAL_CHAIN_DEFAULTS.confirmationDepth,
    blockRangeLimit: LOCAL_CHAIN_DEFAULTS.blockRangeLimit,
    evm: true,
    deployerPrivateKey: devDeployerKey(),
  };
}

/**
 * anvil mines a block only when a transaction arrives, so on a quiet local chain a transaction
 * would never get `depth` blocks on top of it and nothing would ever confirm. After every block
 * that holds transactions this mines `depth` empty blocks, so confirmations come within a second,
 * as they would on a chain with steady block times, without filling the saved state with empty
 * blocks while nothing happens.
 */
export function startLocalConfirmer(
  rpcUrl: string,
  depth: number,
  logger: Logger,
  intervalMs = 500,
  now: () => number = Date.now,
): { stop(): Promise<void> } {
  const rpc = createRpc(rpcUrl);
  let seen = -1n;
  /**
   * A quiet chain would also never close a UTC day: the snapshot of day D needs a block at or after
   * D+1 00:00 UTC. When the newest block is from an earlier UTC day than the wall clock, mine one
   * block at the current second, and `depth` on top so it confirms.
   */
  const closeDay = async () => {
    const latest = (await rpc('eth_getBlockByNumber', ['latest', false])) as {
      timestamp: string;
    } | null;
    if (!latest) return;
    const nowSeconds = Math.floor(now() / 1000);
    const blockDay = Math.floor(Number(BigInt(latest.timestamp)) / 86_400);
    if (blockDay >= Math.floor(nowSeconds / 86_400)) return;
    await rpc('evm_mine', [toHex(nowSeconds)]);
    await rpc('anvil_mine', [toHex(depth)]);
    logger.debug({ timestamp: nowSeconds }, 'local chain: mined a block to close the UTC day');
  };
  let stopped = false;
  let running: Promise<void> | undefined;
  const hasTransactions = async (n: bigint) => {
    const block = (await rpc('eth_getBlockByNumber', [toHex(n), false])) as {
      transactions: unknown[];
    } | null;
    return (block?.transactions.length ?? 0) > 0;
  };
  const poll = async () => {
    await closeDay();
    const head = BigInt((await rpc('eth_blockNumber', [])) as string);
    if (head === seen) return;
    seen = head;
    // The newest block with transactions among the last `depth` decides how many are missing
    // (also after a restart, e.g. when an operator command mined one while the service was down).
    for (let i = 0n; i < BigInt(depth) && i <= head; i++) {
      if (await hasTransactions(head - i)) {
        const missing = BigInt(depth) - i;
        await rpc('anvil_mine', [toHex(missing)]);
        seen = head + missing;
        return;
      }
    }
  };
  const timer = setInterval(() => {
    if (stopped || running) return;
    running = poll()
      .catch((err: unknown) => logger.debug({ err }, 'local confirmer poll failed'))
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/** Delays before each new Multicall3 check after the check at start failed; the last repeats. */
export const MULTICALL3_RECHECK_DELAYS_MS: readonly number[] = [5_000, 15_000, 60_000, 300_000];

/**
 * A configured chain's client, gathering reads into Multicall3 calls when the chain has the
 * contract. Checked at start; a chain without it is read one call at a time, and says so. When the
 * check itself fails (the provider down or refusing at start) reads go one call each meanwhile, and
 * the check is made again in the background (MULTICALL3_RECHECK_DELAYS_MS) until it gets an answer:
 * then the client in use becomes the gathering one, without a restart. Before, a provider blip at
 * start left every read one call each until the next start (301 instead of 2 calls a tick at 50
 * products), and a warning said the chain had no Multicall3.
 */
export async function clientWithMulticall(
  chain: ChainSettings,
  logger: Logger,
  options: { recheckDelaysMs?: readonly number[] } = {},
): Promise<{ client: ChainClient; stop(): void }> {
  const plain = createChainClient(chain);
  const gathering = (multicall3: Multicall3 | undefined) => {
    if (!multicall3) {
      logger.warn(
        { chainId: chain.chainId, address: MULTICALL3_ADDRESS },
        'no Multicall3 on this chain: every contract read is its own RPC call',
      );
      return plain;
    }
    return createChainClient(chain, { multicall3 });
  };
  try {
    const client = gathering(await findMulticall3(plain, chain.chainId));
    return { client, stop: () => {} };
  } catch (err) {
    logger.warn(
      { chainId: chain.chainId, err: (err as Error).message },
      'could not check for Multicall3 at start (the RPC call failed): reads go one call each until a later check succeeds, checked again in the background',
    );
  }
  // The client handed out forwards to the one in use: plain until a check answers.
  let current: ChainClient = plain;
  const client = new Proxy(plain, {
    get: (_target, property) => Reflect.get(current, property, current),
  }) as ChainClient;
  const delays = options.recheckDelaysMs ?? MULTICALL3_RECHECK_DELAYS_MS;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    const delay = delays[Math.min(attempt, delays.length - 1)]!;
    attempt++;
    timer = setTimeout(check, delay);
    timer.unref();
  };
  const check = async () => {
    let found: Multicall3 | undefined;
    try {
      found = await findMulticall3(plain, chain.chainId);
    } catch (err) {
      logger.debug(
        { chainId: chain.chainId, err: (err as Error).message, attempt },
        'Multicall3 check failed again',
      );
      schedule();
      return;
    }
    if (stopped) return;
    current = gathering(found);
    if (found) {
      logger.info(
        { chainId: chain.chainId, address: found.address, attempts: attempt },
        'Multicall3 found on a later check: contract reads are gathered into one call again',
      );
    }
  };
  schedule();
  return {
    client,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** Starts (or reads) the chains of this process. */
export async function startChainRuntime(
  config: Config,
  logger: Logger,
  options: { signal?: AbortSignal } = {},
): Promise<ChainRuntime> {
  if (config.CHAINS_FILE) {
    const chains = readChainsFile(config.CHAINS_FILE);
    const clients = await Promise.all(chains.map((c) => clientWithMulticall(c, logger)));
    return {
      chains,
      clients: new Map(chains.map((c, i) => [c.chainId, clients[i]!.client])),
      stop: async () => {
        for (const c of clients) c.stop();
      },
    };
  }
  const local = await ensureLocalChain({
    dataDir: config.DATA_DIR,
    seed: config.LOCAL_CHAIN_SEED,
    days: config.LOCAL_CHAIN_DAYS,
    port: config.LOCAL_CHAIN_PORT,
    signal: options.signal,
  });
  const settings = localChainSettings(local.anvil.rpcUrl, local.deployment.chainId);
  const confirmer = startLocalConfirmer(local.anvil.rpcUrl, settings.confirmationDepth, logger);
  logger.info(
    {
      rpcUrl: local.anvil.rpcUrl,
      chainId: settings.chainId,
      reloaded: local.reloaded,
      seconds: local.seconds,
    },
    'local chain ready',
  );
  // A local chain built before Multicall3 (or this build's) was part of it gets it now.
  const multicall3 = await ensureLocalMulticall3(createRpc(local.anvil.rpcUrl));
  return {
    chains: [settings],
    clients: new Map([[settings.chainId, createChainClient(settings, { multicall3 })]]),
    local,
    async stop(options) {
      await confirmer.stop();
      await local.stop(options);
    },
  };
}

/**
 * The chains as a one-shot CLI command sees them, without starting anything: CHAINS_FILE, or the
 * local chain at the RPC URL the running service wrote into DATA_DIR/chain/deployment.json
 * (undefined rpc when the local chain was never built).
 */
export function configuredChains(config: Config): {
  chains: ChainSettings[];
  local?: LocalDeployment;
} {
  if (config.CHAINS_FILE) return { chains: readChainsFile(config.CHAINS_FILE) };
  const file = deploymentFile(config.DATA_DIR);
  if (!existsSync(file)) {
    // Never built: products can still be created for it; operator calls need it running.
    return { chains: [localChainSettings(`http://127.0.0.1:${config.LOCAL_CHAIN_PORT}`)] };
  }
  const local = readDeployment(file);
  return { chains: [localChainSettings(local.rpcUrl, local.chainId)], local };
}
