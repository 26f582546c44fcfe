/**
 * Activation: a deployment whose receipt is `confirmationDepth` blocks deep becomes an active
 * product. The move to `active`, its `product.deployed` event and the PROVISIONAL snapshot of the
 * deployment day are stored in one transaction (DECISIONS: latest_metrics is null only while
 * pending_deploy; the first snapshot is written when the product becomes active). That row holds
 * the chain state at the deployment block, no APY and no daily figures
 * (src/sync/metrics/provisional.ts); the metrics processor replaces it with the real row when the
 * day closes and backfills every day from `deployed_block`.
 */
import { type Address, getAddress } from 'viem';
import type { ChainSettings } from '../../chain/chains.ts';
import type { ChainClient } from '../../chain/client.ts';
import { readShareDecimals } from '../../chain/read-share-decimals.ts';
import type { Database } from '../../db/client.ts';
import { createEventsRepo, dedupeKey } from '../../db/events.ts';
import { createProductsRepo, type Product } from '../../db/products.ts';
import { createSnapshotsRepo } from '../../db/snapshots.ts';
import type { Logger } from '../../logger.ts';
import { outboundPayload } from '../../webhooks/event-catalogue.ts';
import { readProvisionalSnapshot } from '../metrics/provisional.ts';

export interface ActivationDeps {
  db: Database;
  chain: ChainSettings;
  client: ChainClient;
  log: Logger;
}

/** Where a confirmed deployment put the engine. */
export interface Deployment {
  contractAddress: Address;
  blockNumber: bigint;
}

export function createActivation(deps: ActivationDeps) {
  const { db, chain, client, log } = deps;

  /** Moves `p` to active from its confirmed deployment; false when it moved meanwhile. */
  async function activate(p: Product, receipt: Deployment): Promise<boolean> {
    const engine = getAddress(receipt.contractAddress); // EIP-55, as every stored address
    const [shareDecimals, block] = await Promise.all([
      readShareDecimals(client, { vault: engine, blockNumber: receipt.blockNumber }),
      client.getBlock({ blockNumber: receipt.blockNumber }),
    ]);
    const at = new Date(Number(block.timestamp) * 1000);
    // Read before the transaction: a failed read leaves the product pending for the next tick.
    const firstSnapshot = await readProvisionalSnapshot(client, {
      productId: p.id,
      engine,
      underlyingVault: p.underlyingVaultAddress,
      blockNumber: receipt.blockNumber,
      blockTimestamp: at,
      totalFeeBps: p.serviceFeeBps + p.partnerFeeBps,
    });
    const moved = await db.transaction(async (tx) => {
      const ok = await createProductsRepo(tx).markDeployed(p.id, {
        engineAddress: engine,
        shareDecimals,
        block: receipt.blockNumber,
        at,
      });
      if (!ok) return false;
      await createEventsRepo(tx).insert({
        partnerId: p.partnerId,
        environment: p.environment,
        productId: p.id,
        eventType: 'product.deployed',
        dedupeKey: dedupeKey.productDeployed(p.slug),
        payload: outboundPayload('product.deployed', {
          slug: p.slug,
          chain_id: chain.chainId,
          engine_contract_address: engine,
          underlying_vault_address: p.underlyingVaultAddress,
          status: 'active',
          occurred_at: at.toISOString(),
        }),
        occurredAt: at,
      });
      // Unless the processor already wrote the day's real row (it never gives way to this one).
      await createSnapshotsRepo(tx).insertProvisional(firstSnapshot);
      return true;
    });
    if (moved) {
      log.info(
        { slug: p.slug, engine, block: receipt.blockNumber.toString() },
        'engine deployed; product active',
      );
    }
    return moved;
  }

  return { activate };
}

export type Activation = ReturnType<typeof createActivation>;
