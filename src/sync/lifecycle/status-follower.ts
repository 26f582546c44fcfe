/**
 * The status follower: every deployed `active`/`paused` product follows its chain at the confirmed
 * block (head − depth, so a shallow reorg cannot flip a status): engine `paused()` → chain reason,
 * upstream vault not ok (src/chain/read-upstream-status.ts) → upstream reason, engine
 * `deprecated()` → `deprecated` (final), and the engine's fees in force → the product's
 * `service_fee_bps`/`partner_fee_bps` (a decrease, or an increase applied after its notice; a merely
 * scheduled increase is not in force). `vault_pause` events: see applyPauseReasons.
 */
import type { Address } from 'viem';
import type { ChainSettings } from '../../chain/chains.ts';
import type { ChainClient } from '../../chain/client.ts';
import { readEngineFlags } from '../../chain/read-engine-flags.ts';
import { readFeesInForce } from '../../chain/read-fees-in-force.ts';
import { readUpstreamStatus } from '../../chain/read-upstream-status.ts';
import { chainErrorMessage } from '../../chain/send-engine-call.ts';
import type { Database } from '../../db/client.ts';
import type { Product, ProductsRepo } from '../../db/products.ts';
import type { Logger } from '../../logger.ts';
import { isRetryable } from '../../worker/errors.ts';
import { applyPauseReasons } from './status.ts';

export interface StatusFollowerDeps {
  db: Database;
  chain: ChainSettings;
  client: ChainClient;
  products: ProductsRepo;
  log: Logger;
  /** Clock for the once-per-UTC-day `vault_pause` (tests move it). */
  now: () => Date;
}

export function createStatusFollower(deps: StatusFollowerDeps) {
  const { db, chain, client, products, log, now } = deps;

  /** The chain state one product follows, read at `confirmed`. */
  async function readState(p: Product & { engineAddress: Address }, confirmed: bigint) {
    const [flags, fees, upstream] = await Promise.all([
      readEngineFlags(client, { engine: p.engineAddress, blockNumber: confirmed }),
      readFeesInForce(client, { engine: p.engineAddress, blockNumber: confirmed }),
      readUpstreamStatus(client, {
        vault: p.underlyingVaultAddress,
        engine: p.engineAddress,
        blockNumber: confirmed,
      }),
    ]);
    return { flags, fees, halted: !upstream.ok };
  }

  /**
   * Follows every deployed product at `confirmed`; returns the slugs whose status changed. Every
   * product's reads are made at once: on a chain with Multicall3 they go out as one call (or a few)
   * per tick, however many products there are, instead of six per product.
   */
  async function follow(confirmed: bigint): Promise<string[]> {
    const moved: string[] = [];
    const deployed = (await products.listDeployedOnChain(chain.chainId)).filter(
      (p): p is Product & { engineAddress: Address } =>
        (p.status === 'active' || p.status === 'paused') &&
        p.engineAddress !== null &&
        p.deployedBlock !== null &&
        p.deployedBlock <= confirmed,
    );
    const states = await Promise.allSettled(deployed.map((p) => readState(p, confirmed)));
    for (const [i, p] of deployed.entries()) {
      const state = states[i]!;
      try {
        if (state.status === 'rejected') throw state.reason;
        const { flags, fees, halted } = state.value;
        if (await products.setFeesInForce(p.id, fees)) {
          log.info(
            { slug: p.slug, from: [p.serviceFeeBps, p.partnerFeeBps], to: fees },
            'product fees follow the engine',
          );
        }
        if (flags.deprecated) {
          if (await products.markDeprecated(p.id)) {
            moved.push(p.slug);
            log.info({ slug: p.slug }, 'engine deprecated on chain; product deprecated');
          }
          continue;
        }
        const change = await applyPauseReasons(
          db,
          p,
          { chainPaused: flags.paused, upstreamHalted: halted },
          now(),
        );
        if (change && change.before !== change.after) {
          moved.push(p.slug);
          log.info(
            {
              slug: p.slug,
              from: change.before,
              to: change.after,
              enginePaused: flags.paused,
              halted,
            },
            'product status follows the chain',
          );
        }
      } catch (err) {
        // A dropped database connection or an RPC hiccup is retried next tick: a warning.
        log[isRetryable(err) ? 'warn' : 'error'](
          { slug: p.slug, err: chainErrorMessage(err) },
          'status read failed',
        );
      }
    }
    return moved;
  }

  return { follow };
}

export type StatusFollower = ReturnType<typeof createStatusFollower>;
