/**
 * Deploys the local chain's contracts in two hand-mined blocks: the stablecoin, one sync vault, one
 * async vault and one engine per deployed demo product (block 1); then minters, user funding and
 * approvals (block 2). Addresses follow from the deployer's nonces, so the same code gives the same
 * addresses on every fresh chain.
 */
import { type Address, encodeDeployData, encodeFunctionData, maxUint256 } from 'viem';
import { engineConstructorArgs } from '../deploy.ts';
import {
  asyncYieldVaultAbi,
  asyncYieldVaultBytecode,
  testUSDAbi,
  testUSDBytecode,
  yieldEngineAbi,
  yieldEngineBytecode,
  yieldVaultAbi,
  yieldVaultBytecode,
} from '../generated/index.ts';
import { permitRouterAddress, permitRouterDeployment } from '../permit-router.ts';
import { LOCAL_ROLES } from './accounts.ts';
import type { BlockBuilder } from './block-builder.ts';
import { type DemoProduct, deployedDemoProducts } from './demo-manifest.ts';
import type { DeployedContract } from './deployment.ts';
import { aprBpsToRatePerSecond } from './rates.ts';

export const USD = 1_000_000n; // one whole unit of the 6-decimal stablecoin
export const USER_FUNDING = 10_000_000n * USD;
export const ASYNC_SETTLEMENT_DELAY_SECONDS = 86_400;
export const INITIAL_SYNC_APR_BPS = 500;
export const INITIAL_ASYNC_APR_BPS = 420;

export interface LocalEngine extends DeployedContract {
  product: DemoProduct;
  underlyingVault: Address;
}

export interface LocalContracts {
  asset: DeployedContract;
  syncVault: DeployedContract;
  asyncVault: DeployedContract;
  engines: LocalEngine[];
  /** The permit deposit router (CREATE2, at its computed address). */
  permitRouter: DeployedContract;
}

export async function deployLocalChain(
  builder: BlockBuilder,
  options: { timestamp: number },
): Promise<LocalContracts> {
  const deployer = LOCAL_ROLES.deployer;
  const products = deployedDemoProducts();

  await builder.send({
    from: deployer,
    data: encodeDeployData({ abi: testUSDAbi, bytecode: testUSDBytecode, args: [deployer] }),
    label: 'deploy TestUSD',
  });
  const deployBlock1 = await builder.mine(options.timestamp);
  const asset = deployBlock1.receipts[0]?.contractAddress;
  if (!asset) throw new Error('TestUSD was not created');

  await builder.send({
    from: deployer,
    data: encodeDeployData({
      abi: yieldVaultAbi,
      bytecode: yieldVaultBytecode,
      args: [
        asset,
        'Demo Yield Vault',
        'dyUSD',
        deployer,
        aprBpsToRatePerSecond(INITIAL_SYNC_APR_BPS),
      ],
    }),
    label: 'deploy YieldVault',
  });
  await builder.send({
    from: deployer,
    data: encodeDeployData({
      abi: asyncYieldVaultAbi,
      bytecode: asyncYieldVaultBytecode,
      args: [
        asset,
        'Demo Async Yield Vault',
        'daUSD',
        deployer,
        aprBpsToRatePerSecond(INITIAL_ASYNC_APR_BPS),
        BigInt(ASYNC_SETTLEMENT_DELAY_SECONDS),
      ],
    }),
    label: 'deploy AsyncYieldVault',
  });
  const vaultBlock = await builder.mine(options.timestamp + 12);
  const syncVault = vaultBlock.receipts[0]?.contractAddress;
  const asyncVault = vaultBlock.receipts[1]?.contractAddress;
  if (!syncVault || !asyncVault) throw new Error('vaults were not created');

  for (const product of products) {
    const underlyingVault = product.vaultKind === 'async' ? asyncVault : syncVault;
    await builder.send({
      from: deployer,
      data: encodeDeployData({
        abi: yieldEngineAbi,
        bytecode: yieldEngineBytecode,
        args: engineConstructorArgs({
          asset,
          underlyingVault,
          name: product.engineName,
          symbol: product.engineSymbol,
          serviceFeeRecipient: LOCAL_ROLES.serviceFeeRecipient,
          partnerFeeRecipient: product.partnerRecipient,
          serviceFeeBps: product.serviceFeeBps,
          partnerFeeBps: product.partnerFeeBps,
          operator: deployer,
        }),
      }),
      label: `deploy engine ${product.slug}`,
    });
  }
  const engineBlock = await builder.mine(options.timestamp + 24);
  const engines: LocalEngine[] = products.map((product, i) => {
    const address = engineBlock.receipts[i]?.contractAddress;
    if (!address) throw new Error(`engine ${product.slug} was not created`);
    return {
      product,
      address,
      underlyingVault: product.vaultKind === 'async' ? asyncVault : syncVault,
      deploymentBlock: Number(engineBlock.number),
    };
  });

  // Setup: the vaults pay interest by minting; users get funds and approve every engine once.
  for (const vault of [syncVault, asyncVault]) {
    await builder.send({
      from: deployer,
      to: asset,
      data: encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [vault, true] }),
      label: `setMinter ${vault}`,
    });
  }
  for (const user of LOCAL_ROLES.users) {
    await builder.send({
      from: deployer,
      to: asset,
      data: encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'mint',
        args: [user, USER_FUNDING],
      }),
      label: `fund ${user}`,
    });
    for (const engine of engines) {
      await builder.send({
        from: user,
        to: asset,
        data: encodeFunctionData({
          abi: testUSDAbi,
          functionName: 'approve',
          args: [engine.address, maxUint256],
        }),
        label: `approve ${engine.product.slug} for ${user}`,
      });
    }
  }
  // Last, so that every address above stays what it was: the permit deposit router (CREATE2
  // through anvil's deterministic deployment proxy, at the address every chain gives it).
  await builder.send({
    from: deployer,
    ...permitRouterDeployment(),
    gas: 2_000_000n,
    label: 'deploy PermitDepositRouter',
  });
  const setupBlock = await builder.mine(options.timestamp + 36);

  return {
    asset: { address: asset, deploymentBlock: Number(deployBlock1.number) },
    syncVault: { address: syncVault, deploymentBlock: Number(vaultBlock.number) },
    asyncVault: { address: asyncVault, deploymentBlock: Number(vaultBlock.number) },
    engines,
    permitRouter: { address: permitRouterAddress(), deploymentBlock: Number(setupBlock.number) },
  };
}
