/**
 * Builds a complete local chain on a running anvil: deployment, simulated history and a closing
 * block, then hands the node back with automine on. Returns the deployment description.
 */

import type { Address } from 'viem';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../client.ts';
import { installMulticall3 } from '../multicall3.ts';
import { LOCAL_ROLES } from './accounts.ts';
import { BlockBuilder } from './block-builder.ts';
import { allDemoProducts } from './demo-manifest.ts';
import { ASYNC_SETTLEMENT_DELAY_SECONDS, deployLocalChain } from './deploy-local.ts';
import type { DeployedEngine, LocalDeployment, PendingEngine } from './deployment.ts';
import { createRpc } from './rpc.ts';
import { DAY, simulateHistory } from './simulate.ts';

export const DEFAULT_DAYS = 200;
export const DEFAULT_SEED = 'demo';

export interface BuildLocalChainOptions {
  rpcUrl: string;
  chainId: number;
  seed: string;
  days: number;
  /** Genesis time the node was started with. */
  genesisTimestamp: number;
  /**
   * Time of the closing block after the history. Absent: the first second after the history (a fully
   * reproducible chain). The CLI passes the wall clock so the chain's time continues from now.
   */
  closingTimestamp?: number;
}

/** Genesis one hour before 00:00 UTC `days` days before today: the history then ends yesterday. */
export function relativeGenesis(days: number, nowSeconds = Math.floor(Date.now() / 1000)): number {
  const today = Math.floor(nowSeconds / DAY) * DAY;
  return today - days * DAY - 3600;
}

/** 00:00 UTC of the first simulated day: the first midnight after genesis (deployment fits between). */
export function historyStartFor(genesisTimestamp: number): number {
  return Math.floor(genesisTimestamp / DAY) * DAY + DAY;
}

export async function buildLocalChain(options: BuildLocalChainOptions): Promise<LocalDeployment> {
  const rpc = createRpc(options.rpcUrl);
  const publicClient = createChainClient(
    endpointOf(options.rpcUrl, options.chainId),
    LOCAL_NODE_CLIENT,
  );
  const builder = new BlockBuilder(rpc);
  const historyStartTimestamp = historyStartFor(options.genesisTimestamp);
  const historyEndTimestamp = historyStartTimestamp + options.days * DAY;

  const t0 = performance.now();
  // Before anything else, so reads at every block of the history can be gathered into one call.
  await installMulticall3(rpc);
  await builder.begin();
  const contracts = await deployLocalChain(builder, { timestamp: options.genesisTimestamp + 60 });
  const t1 = performance.now();
  const sim = await simulateHistory(builder, publicClient, contracts, {
    seed: options.seed,
    days: options.days,
    historyStartTimestamp,
  });
  const closing = Math.max(
    options.closingTimestamp ?? historyEndTimestamp + 1,
    builder.timestamp + 1,
  );
  await builder.mine(closing);
  await builder.end();
  const t2 = performance.now();

  const engines: Record<string, DeployedEngine> = {};
  for (const e of contracts.engines) {
    const p = e.product;
    if (p.status === 'pending_deploy') continue;
    engines[p.slug] = {
      slug: p.slug,
      partner: p.partnerName,
      environment: p.environment,
      productKey: p.key,
      displayName: p.displayName,
      riskLabel: p.riskLabel,
      vaultKind: p.vaultKind,
      address: e.address,
      deploymentBlock: e.deploymentBlock,
      underlyingVault: e.underlyingVault,
      serviceFeeBps: p.serviceFeeBps,
      partnerFeeBps: p.partnerFeeBps,
      serviceFeeRecipient: LOCAL_ROLES.serviceFeeRecipient,
      partnerFeeRecipient: p.partnerRecipient,
      status: p.status,
      holders: sim.holders.get(e.address) ?? [],
    };
  }
  const pending: Record<string, PendingEngine> = {};
  for (const p of allDemoProducts().filter((x) => x.status === 'pending_deploy')) {
    const underlyingVault: Address =
      p.vaultKind === 'async' ? contracts.asyncVault.address : contracts.syncVault.address;
    pending[p.slug] = {
      slug: p.slug,
      partner: p.partnerName,
      environment: p.environment,
      productKey: p.key,
      displayName: p.displayName,
      riskLabel: p.riskLabel,
      vaultKind: p.vaultKind,
      params: {
        asset: contracts.asset.address,
        underlyingVault,
        name: p.engineName,
        symbol: p.engineSymbol,
        serviceFeeRecipient: LOCAL_ROLES.serviceFeeRecipient,
        partnerFeeRecipient: p.partnerRecipient,
        serviceFeeBps: p.serviceFeeBps,
        partnerFeeBps: p.partnerFeeBps,
        operator: LOCAL_ROLES.deployer,
      },
    };
  }

  return {
    version: 1,
    rpcUrl: options.rpcUrl,
    chainId: options.chainId,
    seed: options.seed,
    days: options.days,
    genesisTimestamp: options.genesisTimestamp,
    historyStartTimestamp,
    historyEndTimestamp,
    historyEndBlock: Number(sim.lastBlock),
    deployer: LOCAL_ROLES.deployer,
    operator: LOCAL_ROLES.deployer,
    serviceFeeRecipient: LOCAL_ROLES.serviceFeeRecipient,
    asset: { ...contracts.asset, symbol: 'TUSD', decimals: 6 },
    vaults: {
      sync: { ...contracts.syncVault, kind: 'sync' },
      async: {
        ...contracts.asyncVault,
        kind: 'async',
        settlementDelaySeconds: ASYNC_SETTLEMENT_DELAY_SECONDS,
      },
    },
    engines,
    pending,
    permitRouter: contracts.permitRouter,
    timings: {
      deploySeconds: round1((t1 - t0) / 1000),
      simulateSeconds: round1((t2 - t1) / 1000),
      transactions: sim.transactions,
      blocks: sim.blocks,
    },
  };
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
