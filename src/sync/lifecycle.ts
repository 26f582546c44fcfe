/**
 * The product lifecycle worker, one per chain, under the lease `lifecycle:<chainId>` so that with
 * several workers exactly one moves the products of a chain. Each tick, at one head block:
 * 1. the deployer (lifecycle/deployer.ts) starts the deployments of `pending_deploy` products and
 *    follows the recorded ones; a deployment `confirmationDepth` blocks deep is activated
 *    (lifecycle/activation.ts: `active`, `product.deployed` and the provisional snapshot at once);
 * 2. the status follower (lifecycle/status-follower.ts) moves deployed products between `active`,
 *    `paused` and `deprecated` as their engine and upstream vault say at the confirmed block;
 * 3. the permit deposit router (lifecycle/permit-router.ts) is deployed once the chain has a product;
 * 4. the signer watch follows the operator's transactions, and the request keeper
 *    (lifecycle/request-keeper.ts) settles what pooled-id underlyings fulfilled.
 */

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ChainSettings } from '../chain/chains.ts';
import type { ChainClient } from '../chain/client.ts';
import { confirmedBlock } from '../chain/confirmed-head.ts';
import { signerAccount } from '../chain/signer.ts';
import type { Database } from '../db/client.ts';
import { createProductDeploysRepo } from '../db/product-deploys.ts';
import { createProductsRepo } from '../db/products.ts';
import type { Logger } from '../logger.ts';
import { createLease, createLeasedJob } from '../worker/lease.ts';
import type { Job } from '../worker/runner.ts';
import { createActivation } from './lifecycle/activation.ts';
import { createDeployer } from './lifecycle/deployer.ts';
import { createPermitRouterKeeper } from './lifecycle/permit-router.ts';
import { createRequestKeeper } from './lifecycle/request-keeper.ts';
import { createStatusFollower } from './lifecycle/status-follower.ts';
import { createSignerWatch } from './signer-watch.ts';

export interface LifecycleOptions {
  db: Database;
  logger: Logger;
  chain: ChainSettings;
  client: ChainClient;
  /** Identity of this worker in the lease table. */
  holder: string;
  /** Clock for the once-per-UTC-day `vault_pause` (tests move it). */
  now?: () => Date;
  leaseTtlMs?: number;
}

export interface LifecycleTickResult {
  /** False when another worker holds this chain's lease. */
  leased: boolean;
  deployed: string[];
  /** Slugs whose status changed this tick. */
  moved: string[];
  /** Pooled-id engines sent `settleRequests()` this tick (request-keeper.ts). */
  settled?: `0x${string}`[];
}

export function defaultHolder(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

export function createLifecycle(options: LifecycleOptions) {
  const { db, logger, chain, client, holder } = options;
  const leaseName = `lifecycle:${chain.chainId}`;
  const lease = createLease({ db, name: leaseName, holder, ttlMs: options.leaseTtlMs ?? 30_000 });
  const log = logger.child({ job: leaseName });
  const products = createProductsRepo(db);
  const activation = createActivation({ db, chain, client, log });
  const deployer = createDeployer({
    chain,
    client,
    products,
    deploys: createProductDeploysRepo(db),
    activation,
    log,
    db,
    holder,
  });
  // Built once: a key file open to others or a missing variable stops the worker at start.
  const signer = createSignerWatch({
    db,
    chain,
    client,
    account: signerAccount(chain),
    log,
    holder,
  });
  const keeper = createRequestKeeper({
    db,
    chain,
    client,
    products,
    sender: signer.sender,
    log,
  });
  const router = createPermitRouterKeeper({
    db,
    chain,
    client,
    account: signerAccount(chain),
    log,
    holder,
  });
  const statuses = createStatusFollower({
    db,
    chain,
    client,
    products,
    log,
    now: options.now ?? (() => new Date()),
  });

  async function tick(): Promise<LifecycleTickResult> {
    const ran = await lease.run(round);
    return ran?.value ?? { leased: false, deployed: [], moved: [] };
  }

  /** One round while holding the chain's lease: deployments first, then statuses. */
  async function round(): Promise<LifecycleTickResult> {
    const head = await client.getBlockNumber({ cacheTime: 0 }); // never a cached head: depth is counted from it
    const confirmed = await confirmedBlock(client, chain, head);
    const deployed = await deployer.deployPending(confirmed);
    const moved = confirmed >= 0n ? await statuses.follow(confirmed) : [];
    // The permit deposit router beside the engines: a failure is logged and retried next round.
    await router
      .ensure(async () => (await products.listAll()).some((p) => p.chainId === chain.chainId))
      .catch((err: unknown) => {
        log.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'deploying the permit deposit router failed',
        );
      });
    // The operator's transactions: a failure here is logged and must not stop the round's work.
    await signer.round().catch((err: unknown) => {
      log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'following the signer failed',
      );
    });
    // Pooled-id engines: settle what their underlying fulfilled, so each fulfilment keeps its price.
    const settled = await keeper.round().catch((err: unknown) => {
      log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'settling pooled requests failed',
      );
      return [];
    });
    return { leased: true, deployed, moved, settled };
  }

  return {
    tick,
    /** The periodic job; on stop it hands the lease back so another worker takes over at once. */
    job(intervalMs: number): Job {
      return createLeasedJob({ lease, intervalMs, logger, tick });
    },
  };
}

export type Lifecycle = ReturnType<typeof createLifecycle>;
