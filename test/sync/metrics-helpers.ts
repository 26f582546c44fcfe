/**
 * Shared by the metrics suites and the metrics benchmark: a local anvil chain with simulated
 * history, and products rows provisioned for its engines exactly as the demo seed would (deployed,
 * with the engine's deployment block), so the processor sees what it sees in production.
 */

import { type Address, encodeFunctionData } from 'viem';
import type { ChainSettings } from '../../src/chain/chains.ts';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../../src/chain/client.ts';
import { yieldEngineAbi, yieldVaultAbi } from '../../src/chain/generated/index.ts';
import { LOCAL_ROLES } from '../../src/chain/local/accounts.ts';
import { type AnvilHandle, startAnvil } from '../../src/chain/local/anvil.ts';
import { BlockBuilder } from '../../src/chain/local/block-builder.ts';
import { buildLocalChain } from '../../src/chain/local/build.ts';
import {
  deployLocalChain,
  type LocalContracts,
  type LocalEngine,
} from '../../src/chain/local/deploy-local.ts';
import type { DeployedEngine, LocalDeployment } from '../../src/chain/local/deployment.ts';
import { aprBpsToRatePerSecond } from '../../src/chain/local/rates.ts';
import { createRpc } from '../../src/chain/local/rpc.ts';
import type { Queryable } from '../../src/db/client.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';

/** 2024-03-10 23:00:00 UTC: a fixed genesis makes every block time (and hash) reproducible. */
export const GENESIS = Date.UTC(2024, 2, 10, 23, 0, 0) / 1000;

export interface LocalHistory {
  anvil: AnvilHandle;
  deployment: LocalDeployment;
  chain: ChainSettings;
}

/**
 * Starts anvil, builds `days` days of history, then mines `extraBlocks` more blocks so the last
 * day's boundary is below the confirmation depth (2) and the day counts as closed.
 */
export async function startHistory(
  seed: string,
  days: number,
  extraBlocks = 2,
): Promise<LocalHistory> {
  const anvil = await startAnvil({ genesisTimestamp: GENESIS });
  try {
    const deployment = await buildLocalChain({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      seed,
      days,
      genesisTimestamp: GENESIS,
    });
    const rpc = createRpc(anvil.rpcUrl);
    let t = deployment.historyEndTimestamp + 1;
    for (let i = 0; i < extraBlocks; i++) {
      t += 60;
      await rpc('evm_setNextBlockTimestamp', [t]);
      await rpc('evm_mine', []);
    }
    const chain: ChainSettings = {
      chainId: anvil.chainId,
      name: 'test',
      rpcUrls: [anvil.rpcUrl],
      confirmationDepth: 2,
      blockRangeLimit: 10_000,
      evm: true,
    };
    return { anvil, deployment, chain };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}

export type ProvisionedEngine = Pick<
  DeployedEngine,
  | 'slug'
  | 'partner'
  | 'environment'
  | 'displayName'
  | 'riskLabel'
  | 'vaultKind'
  | 'address'
  | 'deploymentBlock'
  | 'underlyingVault'
  | 'serviceFeeBps'
  | 'partnerFeeBps'
  | 'serviceFeeRecipient'
  | 'partnerFeeRecipient'
  | 'status'
>;

/** The provisioning view of an engine deployed by deployLocalChain (no simulated history). */
export function fromLocalEngine(e: LocalEngine): ProvisionedEngine {
  const p = e.product;
  return {
    slug: p.slug,
    partner: p.partnerName,
    environment: p.environment,
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
    status: 'active',
  };
}

/** Partners (by name) and deployed products for `engines`, as the demo seed provisions them. */
export async function provisionEngines(
  db: Queryable,
  deployment: Pick<LocalDeployment, 'rpcUrl' | 'chainId' | 'asset'>,
  engines: readonly ProvisionedEngine[],
): Promise<Product[]> {
  const client = createChainClient(
    endpointOf(deployment.rpcUrl, deployment.chainId),
    LOCAL_NODE_CLIENT,
  );
  const partners = createPartnersRepo(db);
  const products = createProductsRepo(db);
  const out: Product[] = [];
  for (const e of engines) {
    const partner = (await partners.findByName(e.partner)) ?? (await partners.create(e.partner));
    const block = await client.getBlock({ blockNumber: BigInt(e.deploymentBlock) });
    out.push(
      await products.create({
        partnerId: partner.id,
        environment: e.environment,
        slug: e.slug,
        displayName: e.displayName,
        riskLabel: e.riskLabel,
        chainId: deployment.chainId,
        vaultKind: e.vaultKind,
        engineName: e.displayName,
        engineSymbol: 'yTEST',
        underlyingVaultAddress: e.underlyingVault,
        assetAddress: deployment.asset.address,
        assetSymbol: deployment.asset.symbol,
        assetDecimals: deployment.asset.decimals,
        serviceFeeBps: e.serviceFeeBps,
        partnerFeeBps: e.partnerFeeBps,
        serviceFeeRecipient: e.serviceFeeRecipient,
        partnerFeeRecipient: e.partnerFeeRecipient,
        deployed: {
          engineAddress: e.address,
          shareDecimals: deployment.asset.decimals + 6,
          block: BigInt(e.deploymentBlock),
          at: new Date(Number(block.timestamp) * 1000),
          status: e.status,
        },
      }),
    );
  }
  return out;
}

export interface HandBuiltChain {
  anvil: AnvilHandle;
  builder: BlockBuilder;
  contracts: LocalContracts;
  chain: ChainSettings;
  info: Pick<LocalDeployment, 'rpcUrl' | 'chainId' | 'asset'>;
  /** Queues a deposit of `assets` base units by `user` into the engine of `slug`. */
  deposit(slug: string, assets: bigint, user?: Address): Promise<void>;
  withdraw(slug: string, assets: bigint, user?: Address): Promise<void>;
  setRate(vault: Address, aprBps: number): Promise<void>;
  engine(slug: string): LocalEngine;
}

/**
 * A chain whose every block time the test chooses: the demo contracts deployed a minute after
 * `genesis`, the sync vault's rate set to 0 (share price exactly 1, so TVLs are exact), automine
 * off. Mine blocks with `builder.mine(timestamp)`.
 */
export async function startHandBuiltChain(genesis: number): Promise<HandBuiltChain> {
  const anvil = await startAnvil({ genesisTimestamp: genesis });
  const rpc = createRpc(anvil.rpcUrl);
  const builder = new BlockBuilder(rpc);
  await builder.begin();
  const contracts = await deployLocalChain(builder, { timestamp: genesis + 60 });
  const engine = (slug: string) => {
    const e = contracts.engines.find((x) => x.product.slug === slug);
    if (!e) throw new Error(`no engine ${slug}`);
    return e;
  };
  const user0 = LOCAL_ROLES.users[0];
  const setRate = async (vault: Address, aprBps: number) => {
    await builder.send({
      from: LOCAL_ROLES.deployer,
      to: vault,
      data: encodeFunctionData({
        abi: yieldVaultAbi,
        functionName: 'setRatePerSecond',
        args: [aprBpsToRatePerSecond(aprBps)],
      }),
      label: `rate ${vault} ${aprBps}`,
    });
  };
  await setRate(contracts.syncVault.address, 0);
  await builder.mine(genesis + 120);
  return {
    anvil,
    builder,
    contracts,
    chain: {
      chainId: anvil.chainId,
      name: 'hand-built',
      rpcUrls: [anvil.rpcUrl],
      confirmationDepth: 2,
      blockRangeLimit: 10_000,
      evm: true,
    },
    info: {
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      asset: { ...contracts.asset, symbol: 'TUSD', decimals: 6 },
    },
    engine,
    setRate,
    async deposit(slug, assets, user = user0) {
      await builder.send({
        from: user,
        to: engine(slug).address,
        data: encodeFunctionData({
          abi: yieldEngineAbi,
          functionName: 'deposit',
          args: [assets, user],
        }),
        label: `deposit ${slug}`,
      });
    },
    async withdraw(slug, assets, user = user0) {
      await builder.send({
        from: user,
        to: engine(slug).address,
        data: encodeFunctionData({
          abi: yieldEngineAbi,
          functionName: 'withdraw',
          args: [assets, user, user],
        }),
        label: `withdraw ${slug}`,
      });
    },
  };
}
