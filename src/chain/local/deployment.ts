/**
 * The description of a local chain after deployment and simulated history: what the service, the
 * demo seed and the tests need to find every contract. JSON-serialisable (block numbers as numbers;
 * they stay far below 2^53), written to `<dataDir>/chain/deployment.json`.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Address } from 'viem';
import type { EngineParams } from '../deploy.ts';
import type {
  Environment,
  ProductKey,
  ProductStatus,
  RiskLabel,
  VaultKind,
} from './demo-manifest.ts';

export interface DeployedContract {
  address: Address;
  deploymentBlock: number;
}

/** What names a demo product, deployed or pending. */
export interface LocalProduct {
  slug: string;
  partner: string;
  environment: Environment;
  productKey: ProductKey;
  displayName: string;
  riskLabel: RiskLabel;
  vaultKind: VaultKind;
}

export interface DeployedEngine extends DeployedContract, LocalProduct {
  underlyingVault: Address;
  serviceFeeBps: number;
  partnerFeeBps: number;
  serviceFeeRecipient: Address;
  partnerFeeRecipient: Address;
  /** Status on chain at the end of the history. */
  status: Exclude<ProductStatus, 'pending_deploy'>;
  /** User wallets (not fee recipients) holding shares at the end of the history. */
  holders: Address[];
}

/** A `pending_deploy` product: everything its deployment needs, not yet on chain. */
export interface PendingEngine extends LocalProduct {
  /** The engine's constructor parameters (the default fee-change notice). */
  params: Omit<EngineParams, 'feeChangeDelaySeconds'>;
}

export interface LocalDeployment {
  version: 1;
  rpcUrl: string;
  chainId: number;
  seed: string;
  days: number;
  /** Block 0 time (seconds). */
  genesisTimestamp: number;
  /** 00:00 UTC of the first simulated day (seconds). */
  historyStartTimestamp: number;
  /** 00:00 UTC after the last simulated day (seconds). */
  historyEndTimestamp: number;
  /** Last block of the simulated history. */
  historyEndBlock: number;
  deployer: Address;
  operator: Address;
  serviceFeeRecipient: Address;
  asset: DeployedContract & { symbol: string; decimals: number };
  vaults: {
    sync: DeployedContract & { kind: 'sync' };
    async: DeployedContract & { kind: 'async'; settlementDelaySeconds: number };
  };
  engines: Record<string, DeployedEngine>;
  pending: Record<string, PendingEngine>;
  /**
   * The permit deposit router (src/chain/permit-router.ts); absent from chains saved before it
   * existed (the lifecycle deploys it there).
   */
  permitRouter?: DeployedContract;
  /**
   * Set when the chain was last saved without its historical states (src/chain/local/anvil.ts):
   * the first block whose state can still be read. Reads at earlier blocks fail after a reload.
   */
  stateReadableFromBlock?: number;
  /** How long building the chain took, for the record. */
  timings: { deploySeconds: number; simulateSeconds: number; transactions: number; blocks: number };
}

export function deploymentFile(dataDir: string): string {
  return path.join(dataDir, 'chain', 'deployment.json');
}

export function writeDeployment(file: string, deployment: LocalDeployment): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(deployment, null, 2)}\n`);
  renameSync(tmp, file); // never leave a half-written description behind
}

export function readDeployment(file: string): LocalDeployment {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as LocalDeployment;
  if (parsed.version !== 1) throw new Error(`unsupported deployment file version in ${file}`);
  return parsed;
}
