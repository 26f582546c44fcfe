/**
 * Demo provisioning: on a fresh database with the local chain and DEMO=true, the two demo partners
 * of src/chain/local/demo-manifest.ts and their products in both environments, in every status.
 *
 * - Engines the local chain deployed become products already deployed, with their final on-chain
 *   status (a paused one is recorded as paused on chain, not by the operator). Their history is
 *   NOT written here: the metrics processor computes every day from the chain.
 * - The manifest's `pending_deploy` product of each partner environment is created HELD: it stays
 *   `pending_deploy` for good, so the demo always has a product that answers 409
 *   engine_not_deployed (and the demo credentials can name one). The hold is the ordinary operator
 *   mechanism (`product create --hold` / `product release`), not a demo special case in the worker.
 * - Each partner environment gets its keys (one revoked) and an inbound webhook secret, written
 *   once to demo-credentials.json, the only place they exist in clear. They are made by the
 *   operations of src/operations/ as the actor `demo`, so the portal's audit log shows them.
 * - To show the move pending_deploy → active with its `product.deployed` event, each partner
 *   environment also gets a "USDC Launch" product over the same vault, created pending and not
 *   held: the lifecycle worker deploys it within seconds of the first start.
 */
import type { Address } from 'viem';
import type { ChainClient } from '../chain/client.ts';
import {
  DEMO_PARTNERS,
  type DemoProduct,
  ENVIRONMENTS,
  PRODUCT_KEYS,
} from '../chain/local/demo-manifest.ts';
import type { LocalDeployment } from '../chain/local/deployment.ts';
import { readShareDecimals } from '../chain/read-share-decimals.ts';
import type { Database } from '../db/client.ts';
import { createPartnersRepo } from '../db/partners.ts';
import { createProductDeploysRepo } from '../db/product-deploys.ts';
import { createProductsRepo, type NewProduct } from '../db/products.ts';
import type { Logger } from '../logger.ts';
import { DEMO } from '../operations/actor.ts';
import { setInboundSecret } from '../operations/inbound-secrets.ts';
import { createKey, revokeKey } from '../operations/keys.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';

/** What a demo user needs per partner environment to make a first call. */
export interface DemoEnvironmentCredentials {
  api_key: string;
  revoked_api_key: string;
  /** The secret this partner environment signs inbound webhooks with. */
  inbound_secret: string;
  /**
   * A product slug per status, and `launch`: the product the worker deploys on the first start
   * (pending_deploy → active with `product.deployed`; priced on the underlying's estimate on its
   * first day).
   */
  products: Record<(typeof PRODUCT_KEYS)[number] | 'launch', string>;
  /** Wallets holding a position in the `active` product. */
  wallets: string[];
  /** Wallets holding a position in the `deprecated` product: exit-only, redeem allowed. */
  deprecated_wallets: string[];
  /** The embed of the active product and a host page on another loopback origin (src/embed/demo.ts). */
  embed?: { url: string; host_example_url: string };
}

export interface DemoPartnerCredentials {
  name: string;
  live: DemoEnvironmentCredentials;
  test: DemoEnvironmentCredentials;
}

export interface DemoResult {
  provisioned: boolean;
  partners: string[];
  products: number;
  /** The keys exist in full only here, at creation; written once to demo-credentials.json. */
  credentials: DemoPartnerCredentials[];
}

/** Slug of the extra product the worker deploys on the first start (see the header). */
export function launchSlug(p: DemoProduct): string {
  return `${p.partnerKey}-${p.environment}-usdc-launch`;
}

export async function provisionDemo(options: {
  db: Database;
  logger: Logger;
  deployment: LocalDeployment;
  client: ChainClient;
  /** Encrypts the inbound secrets at rest. */
  secretBox: SecretBox;
}): Promise<DemoResult> {
  const { db, logger, deployment, client, secretBox } = options;
  const none: DemoResult = { provisioned: false, partners: [], products: 0, credentials: [] };
  if ((await createPartnersRepo(db).list()).length > 0) return none;

  // Chain reads first, outside the transaction: share decimals and deployment block times.
  const engines = Object.values(deployment.engines);
  const chainFacts = new Map(
    await Promise.all(
      engines.map(async (e) => {
        const [decimals, block] = await Promise.all([
          readShareDecimals(client, { vault: e.address }),
          client.getBlock({ blockNumber: BigInt(e.deploymentBlock) }),
        ]);
        return [e.slug, { decimals, at: new Date(Number(block.timestamp) * 1000) }] as const;
      }),
    ),
  );

  const common = (p: DemoProduct) => ({
    environment: p.environment,
    slug: p.slug,
    displayName: p.displayName,
    riskLabel: p.riskLabel,
    chainId: deployment.chainId,
    vaultKind: p.vaultKind,
    engineName: p.engineName,
    engineSymbol: p.engineSymbol,
    assetAddress: deployment.asset.address,
    assetSymbol: deployment.asset.symbol,
    assetDecimals: deployment.asset.decimals,
    serviceFeeBps: p.serviceFeeBps,
    partnerFeeBps: p.partnerFeeBps,
    serviceFeeRecipient: deployment.serviceFeeRecipient,
    partnerFeeRecipient: p.partnerRecipient,
    usdPrice: null,
  });

  try {
    return await db.transaction(async (tx) => {
      const partnersRepo = createPartnersRepo(tx);
      // Re-checked inside the transaction: two processes starting at once provision once.
      if ((await partnersRepo.list()).length > 0) return none;
      const products = createProductsRepo(tx);
      const store = createProductDeploysRepo(tx);
      const credentials: DemoPartnerCredentials[] = [];
      let count = 0;
      for (const partner of DEMO_PARTNERS) {
        const { id: partnerId } = await partnersRepo.create(partner.name);
        const perEnv: Partial<Record<'live' | 'test', DemoEnvironmentCredentials>> = {};
        for (const env of ENVIRONMENTS) {
          const products_ = partner.environments[env];
          // Through the operations the portal and the CLI use, as the actor `demo`: the demo's
          // audit log starts with these rows, like any partner's.
          const apiKey = await createKey(tx, DEMO, { partnerId, environment: env, name: 'demo' });
          const revoked = await createKey(tx, DEMO, {
            partnerId,
            environment: env,
            name: 'demo (revoked)',
          });
          await revokeKey(tx, DEMO, revoked.record.id);
          const inbound = await setInboundSecret(tx, secretBox, DEMO, {
            partnerId,
            environment: env,
          });
          perEnv[env] = {
            api_key: apiKey.key,
            revoked_api_key: revoked.key,
            inbound_secret: inbound.secret,
            products: {
              ...(Object.fromEntries(PRODUCT_KEYS.map((k) => [k, products_[k].slug])) as Record<
                (typeof PRODUCT_KEYS)[number],
                string
              >),
              launch: launchSlug(products_.pending_deploy),
            },
            wallets: [...(deployment.engines[products_.active.slug]?.holders ?? [])],
            deprecated_wallets: [...(deployment.engines[products_.deprecated.slug]?.holders ?? [])],
          };
          for (const key of PRODUCT_KEYS) {
            const p = partner.environments[env][key];
            const engine = deployment.engines[p.slug];
            const pending = deployment.pending[p.slug];
            if (engine) {
              const facts = chainFacts.get(p.slug)!;
              await products.create({
                ...common(p),
                partnerId,
                underlyingVaultAddress: engine.underlyingVault,
                serviceFeeRecipient: engine.serviceFeeRecipient,
                partnerFeeRecipient: engine.partnerFeeRecipient,
                deployed: {
                  engineAddress: engine.address,
                  shareDecimals: facts.decimals,
                  block: BigInt(engine.deploymentBlock),
                  at: facts.at,
                  status: engine.status,
                },
              });
              count++;
            } else if (pending) {
              const base: NewProduct = {
                ...common(p),
                partnerId,
                underlyingVaultAddress: pending.params.underlyingVault as Address,
              };
              const held = await products.create(base);
              await store.setHold(held.id, true);
              await products.create({
                ...base,
                slug: launchSlug(p),
                displayName: p.displayName.replace('Next', 'Launch'),
                engineName: p.engineName.replace('Next', 'Launch'),
                engineSymbol: p.engineSymbol.replace(/-NEXT$/, '-LAUNCH'),
              });
              count += 2;
            } else {
              throw new Error(`demo product ${p.slug} is missing from the local deployment`);
            }
          }
        }
        credentials.push({ name: partner.name, live: perEnv.live!, test: perEnv.test! });
      }
      logger.info(
        { partners: DEMO_PARTNERS.map((p) => p.name), products: count },
        'demo provisioned',
      );
      return {
        provisioned: true,
        partners: DEMO_PARTNERS.map((p) => p.name),
        products: count,
        credentials,
      };
    });
  } catch (err) {
    // Another process provisioned first (unique partner name): nothing left to do.
    if ((await createPartnersRepo(db).list()).length > 0) return none;
    throw err;
  }
}
