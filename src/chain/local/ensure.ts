/**
 * The embedded chain for `npm start` and the `chain` CLI command: anvil persisting its state under
 * `<dataDir>/chain/`. The first start deploys and simulates (well under a minute); later starts load
 * the saved state (historical states included, so reads at past blocks keep working) in seconds.
 * A saved chain built from another seed or day count is rebuilt.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../client.ts';
import { type AnvilHandle, DEFAULT_CHAIN_ID, startAnvil } from './anvil.ts';
import { buildLocalChain, relativeGenesis } from './build.ts';
import {
  deploymentFile,
  type LocalDeployment,
  readDeployment,
  writeDeployment,
} from './deployment.ts';

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
}

export interface LocalChain {
  anvil: AnvilHandle;
  deployment: LocalDeployment;
  /** True when the saved chain was loaded rather than built. */
  reloaded: boolean;
  seconds: number;
  /** Stops anvil, which writes the chain's state to disk. */
  stop(): Promise<void>;
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
    const deployment = { ...saved, rpcUrl: anvil.rpcUrl };
    writeDeployment(described, deployment);
    return done(anvil, deployment, true, started);
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
  try {
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
    return done(anvil, deployment, false, started);
  } catch (err) {
    await anvil.stop();
    rmSync(state, { force: true });
    throw err;
  }
}

function done(
  anvil: AnvilHandle,
  deployment: LocalDeployment,
  reloaded: boolean,
  started: number,
): LocalChain {
  return {
    anvil,
    deployment,
    reloaded,
    seconds: Math.round((performance.now() - started) / 100) / 10,
    stop: () => anvil.stop(),
  };
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
