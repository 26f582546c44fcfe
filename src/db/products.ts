/** Repository of the products table: provisioning, lookups, and status moves. */
import { newId } from '../ids.ts';
import type { Queryable } from './client.ts';

export type Environment = 'live' | 'test';
export type ProductStatus = 'pending_deploy' | 'active' | 'paused' | 'deprecated';
export type RiskLabel = 'low' | 'medium' | 'high';
export type VaultKind = 'sync' | 'async';

export interface Product {
  id: string;
  partnerId: string;
  partnerName: string;
  environment: Environment;
  slug: string;
  displayName: string;
  riskLabel: RiskLabel;
  chainId: number;
  status: ProductStatus;
  vaultKind: VaultKind;
  engineAddress: `0x${string}` | null;
  engineName: string;
  engineSymbol: string;
  shareDecimals: number | null;
  underlyingVaultAddress: `0x${string}`;
  assetAddress: `0x${string}`;
  assetSymbol: string;
  assetDecimals: number;
  serviceFeeBps: number;
  partnerFeeBps: number;
  serviceFeeRecipient: `0x${string}`;
  partnerFeeRecipient: `0x${string}`;
  /** USD price of one whole asset unit; null means USD-pegged (1). */
  usdPrice: string | null;
  deployedBlock: bigint | null;
  deployedAt: Date | null;
  operatorPaused: boolean;
  chainPaused: boolean;
  upstreamHalted: boolean;
  deployTxHash: `0x${string}` | null;
  statusChangedAt: Date;
}

export interface NewProduct {
  partnerId: string;
  environment: Environment;
  slug: string;
  displayName: string;
  riskLabel: RiskLabel;
  chainId: number;
  vaultKind: VaultKind;
  engineName: string;
  engineSymbol: string;
  underlyingVaultAddress: `0x${string}`;
  assetAddress: `0x${string}`;
  assetSymbol: string;
  assetDecimals: number;
  serviceFeeBps: number;
  partnerFeeBps: number;
  serviceFeeRecipient: `0x${string}`;
  partnerFeeRecipient: `0x${string}`;
  usdPrice?: string | null;
  /** For an engine that already exists on chain (e.g. the demo's): provisioned as deployed. */
  deployed?: {
    engineAddress: `0x${string}`;
    shareDecimals: number;
    block: bigint;
    at: Date;
    status: Exclude<ProductStatus, 'pending_deploy'>;
  };
}

interface ProductRow {
  id: string;
  partner_id: string;
  partner_name: string;
  environment: Environment;
  slug: string;
  display_name: string;
  risk_label: RiskLabel;
  chain_id: string;
  status: ProductStatus;
  vault_kind: VaultKind;
  engine_address: `0x${string}` | null;
  engine_name: string;
  engine_symbol: string;
  share_decimals: number | null;
  underlying_vault_address: `0x${string}`;
  asset_address: `0x${string}`;
  asset_symbol: string;
  asset_decimals: number;
  service_fee_bps: number;
  partner_fee_bps: number;
  service_fee_recipient: `0x${string}`;
  partner_fee_recipient: `0x${string}`;
  usd_price: string | null;
  deployed_block: string | null;
  deployed_at: Date | null;
  operator_paused: boolean;
  chain_paused: boolean;
  upstream_halted: boolean;
  deploy_tx_hash: `0x${string}` | null;
  status_changed_at: Date;
}

const SELECT = `SELECT p.*, pa.name AS partner_name FROM products p JOIN partners pa ON pa.id = p.partner_id`;

function toProduct(r: ProductRow): Product {
  return {
    id: r.id,
    partnerId: r.partner_id,
    partnerName: r.partner_name,
    environment: r.environment,
    slug: r.slug,
    displayName: r.display_name,
    riskLabel: r.risk_label,
    chainId: Number(r.chain_id),
    status: r.status,
    vaultKind: r.vault_kind,
    engineAddress: r.engine_address,
    engineName: r.engine_name,
    engineSymbol: r.engine_symbol,
    shareDecimals: r.share_decimals,
    underlyingVaultAddress: r.underlying_vault_address,
    assetAddress: r.asset_address,
    assetSymbol: r.asset_symbol,
    assetDecimals: r.asset_decimals,
    serviceFeeBps: r.service_fee_bps,
    partnerFeeBps: r.partner_fee_bps,
    serviceFeeRecipient: r.service_fee_recipient,
    partnerFeeRecipient: r.partner_fee_recipient,
    usdPrice: r.usd_price,
    deployedBlock: r.deployed_block === null ? null : BigInt(r.deployed_block),
    deployedAt: r.deployed_at,
    operatorPaused: r.operator_paused,
    chainPaused: r.chain_paused,
    upstreamHalted: r.upstream_halted,
    deployTxHash: r.deploy_tx_hash,
    statusChangedAt: r.status_changed_at,
  };
}

export function createProductsRepo(db: Queryable) {
  return {
    async create(p: NewProduct): Promise<Product> {
      const id = newId('prd');
      await db.query(
        `INSERT INTO products (id, partner_id, environment, slug, display_name, risk_label, chain_id,
           status, vault_kind, engine_address, engine_name, engine_symbol, share_decimals,
           underlying_vault_address, asset_address, asset_symbol, asset_decimals, service_fee_bps,
           partner_fee_bps, service_fee_recipient, partner_fee_recipient, usd_price, deployed_block,
           deployed_at, chain_paused)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25)`,
        [
          id,
          p.partnerId,
          p.environment,
          p.slug,
          p.displayName,
          p.riskLabel,
          p.chainId,
          p.deployed?.status ?? 'pending_deploy',
          p.vaultKind,
          p.deployed?.engineAddress ?? null,
          p.engineName,
          p.engineSymbol,
          p.deployed?.shareDecimals ?? null,
          p.underlyingVaultAddress,
          p.assetAddress,
          p.assetSymbol,
          p.assetDecimals,
          p.serviceFeeBps,
          p.partnerFeeBps,
          p.serviceFeeRecipient,
          p.partnerFeeRecipient,
          p.usdPrice ?? null,
          p.deployed?.block.toString() ?? null,
          p.deployed?.at ?? null,
          p.deployed?.status === 'paused',
        ],
      );
      return (await this.getById(id))!;
    },

    async getById(id: string): Promise<Product | undefined> {
      const { rows } = await db.query<ProductRow>(`${SELECT} WHERE p.id = $1`, [id]);
      return rows[0] && toProduct(rows[0]);
    },

    async getBySlug(slug: string): Promise<Product | undefined> {
      const { rows } = await db.query<ProductRow>(`${SELECT} WHERE p.slug = $1`, [slug]);
      return rows[0] && toProduct(rows[0]);
    },

    async listForPartner(partnerId: string, environment: Environment): Promise<Product[]> {
      const { rows } = await db.query<ProductRow>(
        `${SELECT} WHERE p.partner_id = $1 AND p.environment = $2 ORDER BY p.slug`,
        [partnerId, environment],
      );
      return rows.map(toProduct);
    },

    async listAll(): Promise<Product[]> {
      const { rows } = await db.query<ProductRow>(`${SELECT} ORDER BY p.slug`);
      return rows.map(toProduct);
    },

    /** Products with an engine on the chain (every status but pending_deploy). */
    async listDeployedOnChain(chainId: number): Promise<Product[]> {
      const { rows } = await db.query<ProductRow>(
        `${SELECT} WHERE p.chain_id = $1 AND p.engine_address IS NOT NULL ORDER BY p.slug`,
        [chainId],
      );
      return rows.map(toProduct);
    },

    async listPendingDeploy(chainId: number): Promise<Product[]> {
      const { rows } = await db.query<ProductRow>(
        `${SELECT} WHERE p.chain_id = $1 AND p.status = 'pending_deploy' ORDER BY p.created_at, p.id`,
        [chainId],
      );
      return rows.map(toProduct);
    },

    async recordDeployTx(id: string, txHash: `0x${string}`): Promise<void> {
      await db.query(
        `UPDATE products SET deploy_tx_hash = $2, updated_at = now() WHERE id = $1 AND status = 'pending_deploy'`,
        [id, txHash],
      );
    },

    /** pending_deploy → active, with the engine's address; false when it had already moved. */
    async markDeployed(
      id: string,
      d: { engineAddress: `0x${string}`; shareDecimals: number; block: bigint; at: Date },
    ): Promise<boolean> {
      const r = await db.query(
        `UPDATE products SET status = 'active', engine_address = $2, share_decimals = $3,
           deployed_block = $4, deployed_at = $5, status_changed_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'pending_deploy'`,
        [id, d.engineAddress, d.shareDecimals, d.block.toString(), d.at],
      );
      return r.rowCount === 1;
    },

    /**
     * Records the pause reasons and derives the status from them (active ⇄ paused; deprecated and
     * pending_deploy never move here). Returns the status before and after.
     */
    async setPauseReasons(
      id: string,
      reasons: Partial<{ operatorPaused: boolean; chainPaused: boolean; upstreamHalted: boolean }>,
    ): Promise<{ before: ProductStatus; after: ProductStatus } | undefined> {
      const { rows } = await db.query<{ before: ProductStatus; after: ProductStatus }>(
        `WITH old AS (SELECT status FROM products WHERE id = $1 FOR UPDATE)
         UPDATE products p SET
           operator_paused = COALESCE($2, p.operator_paused),
           chain_paused = COALESCE($3, p.chain_paused),
           upstream_halted = COALESCE($4, p.upstream_halted),
           status = CASE
             WHEN p.status IN ('active', 'paused') THEN
               CASE WHEN COALESCE($2, p.operator_paused) OR COALESCE($3, p.chain_paused)
                         OR COALESCE($4, p.upstream_halted) THEN 'paused' ELSE 'active' END
             ELSE p.status END,
           status_changed_at = CASE
             WHEN p.status IN ('active', 'paused') AND p.status <>
               (CASE WHEN COALESCE($2, p.operator_paused) OR COALESCE($3, p.chain_paused)
                          OR COALESCE($4, p.upstream_halted) THEN 'paused' ELSE 'active' END)
             THEN now() ELSE p.status_changed_at END,
           updated_at = now()
         FROM old WHERE p.id = $1
         RETURNING old.status AS before, p.status AS after`,
        [
          id,
          reasons.operatorPaused ?? null,
          reasons.chainPaused ?? null,
          reasons.upstreamHalted ?? null,
        ],
      );
      return rows[0];
    },

    /**
     * Records the fees in force on the engine (they change by a decrease, or by an increase applied
     * after its notice). False when they were already these.
     */
    async setFeesInForce(
      id: string,
      fees: { serviceFeeBps: number; partnerFeeBps: number },
    ): Promise<boolean> {
      const r = await db.query(
        `UPDATE products SET service_fee_bps = $2, partner_fee_bps = $3, updated_at = now()
         WHERE id = $1 AND (service_fee_bps <> $2 OR partner_fee_bps <> $3)`,
        [id, fees.serviceFeeBps, fees.partnerFeeBps],
      );
      return r.rowCount === 1;
    },

    /** active|paused → deprecated (final). False when the product was in another state. */
    async markDeprecated(id: string): Promise<boolean> {
      const r = await db.query(
        `UPDATE products SET status = 'deprecated', status_changed_at = now(), updated_at = now()
         WHERE id = $1 AND status IN ('active', 'paused')`,
        [id],
      );
      return r.rowCount === 1;
    },
  };
}

export type ProductsRepo = ReturnType<typeof createProductsRepo>;
