/**
 * Provisions partners and products in a test database from a local chain's deployment, the way the
 * demo does: every deployed engine becomes a product in its final status, every pending one a
 * `pending_deploy` product.
 */
import type { LocalDeployment } from '../../src/chain/local/deployment.ts';
import type { Database } from '../../src/db/client.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';

export async function provisionFromDeployment(
  db: Database,
  d: LocalDeployment,
): Promise<{ partners: Map<string, string>; products: Map<string, Product> }> {
  const partnersRepo = createPartnersRepo(db);
  const productsRepo = createProductsRepo(db);
  const partners = new Map<string, string>();
  const partnerId = async (name: string) => {
    let id = partners.get(name);
    if (!id) {
      id = (await partnersRepo.create(name)).id;
      partners.set(name, id);
    }
    return id;
  };
  const products = new Map<string, Product>();
  const common = {
    chainId: d.chainId,
    assetAddress: d.asset.address,
    assetSymbol: d.asset.symbol,
    assetDecimals: d.asset.decimals,
  };
  for (const e of Object.values(d.engines)) {
    const p = await productsRepo.create({
      ...common,
      partnerId: await partnerId(e.partner),
      environment: e.environment,
      slug: e.slug,
      displayName: e.displayName,
      riskLabel: e.riskLabel,
      vaultKind: e.vaultKind,
      engineName: e.displayName,
      engineSymbol: 'yUSDC',
      underlyingVaultAddress: e.underlyingVault,
      serviceFeeBps: e.serviceFeeBps,
      partnerFeeBps: e.partnerFeeBps,
      serviceFeeRecipient: e.serviceFeeRecipient,
      partnerFeeRecipient: e.partnerFeeRecipient,
      deployed: {
        engineAddress: e.address,
        shareDecimals: d.asset.decimals + 6,
        block: BigInt(e.deploymentBlock),
        at: new Date(d.historyStartTimestamp * 1000),
        status: e.status,
      },
    });
    products.set(e.slug, p);
  }
  for (const e of Object.values(d.pending)) {
    const p = await productsRepo.create({
      ...common,
      partnerId: await partnerId(e.partner),
      environment: e.environment,
      slug: e.slug,
      displayName: e.displayName,
      riskLabel: e.riskLabel,
      vaultKind: e.vaultKind,
      engineName: e.params.name,
      engineSymbol: e.params.symbol,
      underlyingVaultAddress: e.params.underlyingVault,
      serviceFeeBps: e.params.serviceFeeBps,
      partnerFeeBps: e.params.partnerFeeBps,
      serviceFeeRecipient: e.params.serviceFeeRecipient,
      partnerFeeRecipient: e.params.partnerFeeRecipient,
    });
    products.set(e.slug, p);
  }
  return { partners, products };
}
