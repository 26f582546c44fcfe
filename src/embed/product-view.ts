/**
 * What the embed shows about one product, built from the same reads as the partner API (the
 * products repository, the latest daily snapshot, the live health flags), so the embed and the API
 * can never disagree on a figure: TVL is the snapshot's engine_total_assets, the APY its
 * net_apy_for_user, the fees the product's bps.
 */

import type { ScheduledFeeChange } from '../chain/read-scheduled-fee-change.ts';
import type { Product } from '../db/products.ts';
import { type ApyBasis, presentedApys, type SnapshotView } from '../db/snapshot-reads.ts';
import type { HealthReading } from '../http/chain-reader.ts';
import { formatUnits } from '../money/index.ts';

export interface EmbedGate {
  deposit: boolean;
  withdraw: boolean;
  /** Why deposits are off, in words for the user; null when they are on. */
  reason: string | null;
}

export interface EmbedProductView {
  slug: string;
  display_name: string;
  partner: string;
  chain_id: number;
  chain: string;
  engine_address: string;
  asset_address: string;
  asset_symbol: string;
  asset_decimals: number;
  share_decimals: number;
  vault_kind: 'sync' | 'async';
  status: 'active' | 'paused' | 'deprecated';
  service_fee_bps: number;
  partner_fee_bps: number;
  /** A fee change the engine has scheduled (ISO time it may apply from); null when none. */
  scheduled_fee_change: { service_fee_bps: number; partner_fee_bps: number; at: string } | null;
  /**
   * Net APY after fees (decimal fraction, 6 places): the API's latest_metrics.net_apy_for_user, by
   * the same rule (presentedApys). Of the engine's last full day, or before the product has one,
   * the launch-day estimate from the underlying vault; null when neither exists.
   */
  net_apy: string | null;
  /**
   * Where `net_apy` comes from, as the API's latest_metrics.apy_basis: `engine` (the engine's own
   * day) or `underlying_estimate` (no full day of its own yet); null when there is no net_apy.
   */
  apy_basis: ApyBasis | null;
  /**
   * Net APY realised over the 7 days ending at `as_of_date` (the API's latest_metrics.net_apy_7d),
   * shown beside the daily figure; null until the product has 7 days of history.
   */
  net_apy_7d: string | null;
  /** UTC day the APY and TVL were measured on. */
  as_of_date: string | null;
  /** Engine total assets, whole asset units. */
  tvl: string | null;
  /** USD price of one whole asset unit (decimal string; "1" when pegged). */
  usd_price: string;
  /** Block of the engine's deployment: where its logs start. */
  deployed_block: string;
  gate: EmbedGate;
  /**
   * The chain's permit deposit router (contracts/PermitDepositRouter.sol) when it is deployed there,
   * else null: the embed's EIP-2612 rung (one signature, one transaction) goes through it.
   */
  permit_router_address: string | null;
}

/**
 * The same state rules as the API (DECISIONS): paused → no deposit; deprecated → withdraw only.
 * A health reading that failed (RPC down) closes deposits with a reason rather than guessing.
 */
export function embedGate(product: Product, health: HealthReading | undefined): EmbedGate {
  if (product.status === 'deprecated') {
    return {
      deposit: false,
      withdraw: true,
      reason: 'This product is closed to new deposits. You can still withdraw.',
    };
  }
  if (product.status === 'paused' || health?.isPaused) {
    const why = product.upstreamHalted
      ? 'the vault it invests in has halted'
      : product.operatorPaused
        ? 'the operator paused it'
        : 'the product contract is paused';
    return {
      deposit: false,
      withdraw: true,
      reason: `Deposits are paused: ${why}. Withdrawals still work.`,
    };
  }
  if (!health) {
    return {
      deposit: false,
      withdraw: true,
      reason: 'The network cannot be reached right now, so deposits are off. Try again shortly.',
    };
  }
  if (!health.underlyingOk) {
    return {
      deposit: false,
      withdraw: true,
      reason: 'The vault this product invests in is not accepting deposits right now.',
    };
  }
  return { deposit: true, withdraw: true, reason: null };
}

export function buildProductView(
  product: Product,
  snapshot: SnapshotView | undefined,
  health: HealthReading | undefined,
  chainName: string,
  scheduled: ScheduledFeeChange | null = null,
  permitRouter: string | null = null,
): EmbedProductView {
  if (product.status === 'pending_deploy' || !product.engineAddress) {
    throw new Error('a product without an engine has no embed view');
  }
  const apys = snapshot && presentedApys(snapshot);
  return {
    slug: product.slug,
    display_name: product.displayName,
    partner: product.partnerName,
    chain_id: product.chainId,
    chain: chainName,
    engine_address: product.engineAddress,
    asset_address: product.assetAddress,
    asset_symbol: product.assetSymbol,
    asset_decimals: product.assetDecimals,
    share_decimals: product.shareDecimals ?? product.assetDecimals,
    vault_kind: product.vaultKind,
    status: product.status,
    service_fee_bps: product.serviceFeeBps,
    partner_fee_bps: product.partnerFeeBps,
    scheduled_fee_change: scheduled && {
      service_fee_bps: scheduled.serviceFeeBps,
      partner_fee_bps: scheduled.partnerFeeBps,
      at: new Date(Number(scheduled.effectiveAt) * 1000).toISOString(),
    },
    net_apy: apys?.netApyForUser ?? null,
    apy_basis: apys?.basis ?? null,
    net_apy_7d: snapshot?.netApy7d ?? null,
    as_of_date: snapshot?.date ?? null,
    tvl: snapshot ? formatUnits(snapshot.engineTotalAssets, product.assetDecimals) : null,
    usd_price: product.usdPrice ?? '1',
    deployed_block: String(product.deployedBlock ?? 0n),
    gate: embedGate(product, health),
    permit_router_address: permitRouter,
  };
}
