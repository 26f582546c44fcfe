/**
 * The embedded chain for `npm start` and the `chain` CLI command: anvil persisting its state under
 * `<dataDir>/chain/`. The first start deploys and simulates (well under a minute); later starts load
 * the saved state in seconds. A saved chain built from another seed or day count is rebuilt.
 *
 * Historical states: the saved state holds them when its stopper asks (the service does while the
 * demo's history is still being computed, since the metrics read every past day's boundary block),
 * and not otherwise: a full state per block made the write grow without bound (200 days: 531 MB in
 * 6.5 s with them, 106 MB in about 1 s without). After a reload without them, reads at earlier
 * blocks fail, so the reload mines the confirmation depth of empty blocks at once: the block the
 * service reads at (the head minus that depth) then has its state.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { toHex } from 'viem';
import { LOCAL_CHAIN_DEFAULTS } from '../chains.ts';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../client.ts';
import { type AnvilHandle, DEFAULT_CHAIN_ID, startAnvil } from './anvil.ts';
import { buildLocalChain, relativeGenesis } from './build.ts';
import {
  deploymentFile,
  type LocalDeployment,
  readDeployment,
  writeDeployment,
} from './deployment.ts';
import { createRpc } from './rpc.ts';

export interface EnsureLocalChainOptions {
  dataDir: string;
  seed: string;
  days: number;
  port?: number;
  chainId?: number;
  /** Fixed genesis time (seconds): the whole chain, block hashes included, is reproducible. */
  genesisTimestamp?: number;
  /** Discard any saved chain and build a new one. */
  fresh?: boolean;
  /**
   * Stops a first build half-way (the service stopping during it): anvil is stopped unsaved, the
   * build rejects with LocalChainBuildStopped, and the next start builds the chain again.
   */
  signal?: AbortSignal;
}

export class LocalChainBuildStopped extends Error {
  override name = 'LocalChainBuildStopped';
  constructor() {
    super('the first build of the local chain was stopped; the next start builds it again');
  }
}

export interface LocalChain {
  anvil: AnvilHandle;
  deployment: LocalDeployment;
  /** True when the saved chain was loaded rather than built. */
  reloaded: boolean;
  seconds: number;
  /**
   * Saves the chain's state to disk and stops anvil. `historicalStates: false` (default true)
   * saves no state of past blocks: say so when nothing will read them (see the module comment).
   */
  stop(options?: { historicalStates?: boolean }): Promise<void>;
}

export function chainDir(dataDir: string): string {
  return path.join(dataDir, 'chain');
}

export function stateFile(dataDir: string): string {
  return path.join(chainDir(dataDir), 'anvil-state.json');
}

export async function ensureLocalChain(options: EnsureLocalChainOptions): Promise<LocalChain> {
  const started = performance.now();
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  const state = stateFile(options.dataDir);
  const described = deploymentFile(options.dataDir);
  mkdirSync(chainDir(options.dataDir), { recursive: true });

  const saved =
    !options.fresh && existsSync(state) && existsSync(described)
      ? readDeployment(described)
      : undefined;
  const reusable =
    saved !== undefined &&
    saved.seed === options.seed &&
    saved.days === options.days &&
    saved.chainId === chainId &&
    (options.genesisTimestamp === undefined || saved.genesisTimestamp === options.genesisTimestamp);

  if (reusable) {
    const anvil = await startAnvil({ port: options.port, stateFile: state, chainId });
    try {
      await assertLoaded(anvil, saved);
    } catch (err) {
      await anvil.stop();
      throw err;
    }
    if (saved.stateReadableFromBlock !== undefined) await mineConfirmations(anvil);
    const deployment = { ...saved, rpcUrl: anvil.rpcUrl };
    writeDeployment(described, deployment);
    return done(anvil, deployment, true, started, described);
  }

  rmSync(state, { force: true });
  rmSync(described, { force: true });
  const genesisTimestamp = options.genesisTimestamp ?? relativeGenesis(options.days);
  const anvil = await startAnvil({
    port: options.port,
    stateFile: state,
    chainId,
    genesisTimestamp,
  });
  const stopBuild = () => void anvil.stop({ discard: true }).catch(() => {});
  options.signal?.addEventListener('abort', stopBuild, { once: true });
  try {
    if (options.signal?.aborted) throw new LocalChainBuildStopped();
    const deployment = await buildLocalChain({
      rpcUrl: anvil.rpcUrl,
      chainId,
      seed: options.seed,
      days: options.days,
      genesisTimestamp,
      // Relative chains continue at the wall clock; a fixed genesis keeps every block time fixed.
      closingTimestamp:
        options.genesisTimestamp === undefined ? Math.floor(Date.now() / 1000) : undefined,
    });
    writeDeployment(described, deployment);
    return done(anvil, deployment, false, started, described);
  } catch (err) {
    await anvil.stop({ discard: true });
    rmSync(state, { force: true });
    throw options.signal?.aborted ? new LocalChainBuildStopped() : err;
  } finally {
    options.signal?.removeEventListener('abort', stopBuild);
  }
}

function done(
  anvil: AnvilHandle,
  deployment: LocalDeployment,
  reloaded: boolean,
  started: number,
  described: string,
): LocalChain {
  return {
    anvil,
    deployment,
    reloaded,
    seconds: Math.round((performance.now() - started) / 100) / 10,
    async stop(options = {}) {
      const historicalStates = options.historicalStates ?? true;
      if (!historicalStates) {
        // Recorded first: a state saved without its past must never be taken for one with it.
        const head = await headBlock(anvil, deployment).catch(() => undefined);
        if (head !== undefined) {
          // Read again: the file may have changed since the start (e.g. a router deployed).
          writeDeployment(described, {
            ...readDeployment(described),
            stateReadableFromBlock: Number(head),
          });
        }
      }
      await anvil.stop({ historicalStates });
    },
  };
}

function headBlock(anvil: AnvilHandle, deployment: LocalDeployment): Promise<bigint> {
  return createChainClient(
    endpointOf(anvil.rpcUrl, deployment.chainId),
    LOCAL_NODE_CLIENT,
  ).getBlockNumber();
}

/** Empty blocks on top of a reload without historical states (see the module comment). */
async function mineConfirmations(anvil: AnvilHandle): Promise<void> {
  await createRpc(anvil.rpcUrl)('anvil_mine', [toHex(LOCAL_CHAIN_DEFAULTS.confirmationDepth)]);
}
/** A loaded state must hold the history the description promises. */
async function assertLoaded(anvil: AnvilHandle, deployment: LocalDeployment): Promise<void> {
  const client = createChainClient(endpointOf(anvil.rpcUrl, deployment.chainId), LOCAL_NODE_CLIENT);
  const [block, code] = await Promise.all([
    client.getBlockNumber(),
    client.getCode({ address: deployment.asset.address }),
  ]);
  if (block < BigInt(deployment.historyEndBlock) || !code || code === '0x') {
    throw new Error(
      `saved chain state does not match ${deploymentFile('<dataDir>')}; start with --fresh to rebuild`,
    );
  }
}
