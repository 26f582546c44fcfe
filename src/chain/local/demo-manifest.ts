/**
 * The demo partners and their products, the single source for the local chain (which deploys and
 * animates them) and for the service's demo seed (which provisions them). Every partner has `live`
 * and `test` environments with the same five product keys. `pending_deploy` products are NOT
 * deployed by the local chain: their engine parameters are here so a worker can deploy them later.
 */
import type { Address } from 'viem';
import { LOCAL_ROLES } from './accounts.ts';

export const PRODUCT_KEYS = [
  'active',
  'active_async',
  'paused',
  'deprecated',
  'pending_deploy',
] as const;
export type ProductKey = (typeof PRODUCT_KEYS)[number];
export const ENVIRONMENTS = ['live', 'test'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];
export type ProductStatus = 'pending_deploy' | 'active' | 'paused' | 'deprecated';
export type RiskLabel = 'low' | 'medium' | 'high';
export type VaultKind = 'sync' | 'async';

export interface DemoProduct {
  key: ProductKey;
  partnerKey: DemoPartner['key'];
  partnerName: string;
  environment: Environment;
  slug: string;
  displayName: string;
  riskLabel: RiskLabel;
  serviceFeeBps: number;
  partnerFeeBps: number;
  vaultKind: VaultKind;
  partnerRecipient: Address;
  /** Status at the end of the simulated history (and the product's status in the demo seed). */
  status: ProductStatus;
  /** ERC-20 name and symbol of the engine share. */
  engineName: string;
  engineSymbol: string;
}

export interface DemoPartner {
  key: 'acme' | 'bravo';
  name: string;
  partnerRecipient: Address;
  environments: Record<Environment, Record<ProductKey, DemoProduct>>;
}

interface ProductTemplate {
  suffix: string;
  label: string;
  riskLabel: RiskLabel;
  vaultKind: VaultKind;
  status: ProductStatus;
  serviceFeeBps: number;
  partnerFeeBps: number;
}

const TEMPLATES: Record<ProductKey, ProductTemplate> = {
  active: {
    suffix: 'usdc-core',
    label: 'USDC Core',
    riskLabel: 'low',
    vaultKind: 'sync',
    status: 'active',
    serviceFeeBps: 500,
    partnerFeeBps: 1000,
  },
  active_async: {
    suffix: 'usdc-flex',
    label: 'USDC Flex (async redeem)',
    riskLabel: 'medium',
    vaultKind: 'async',
    status: 'active',
    serviceFeeBps: 400,
    partnerFeeBps: 800,
  },
  paused: {
    suffix: 'usdc-boost',
    label: 'USDC Boost',
    riskLabel: 'high',
    vaultKind: 'sync',
    status: 'paused',
    serviceFeeBps: 600,
    partnerFeeBps: 1400,
  },
  deprecated: {
    suffix: 'usdc-legacy',
    label: 'USDC Legacy',
    riskLabel: 'low',
    vaultKind: 'sync',
    status: 'deprecated',
    serviceFeeBps: 500,
    partnerFeeBps: 500,
  },
  pending_deploy: {
    suffix: 'usdc-next',
    label: 'USDC Next',
    riskLabel: 'medium',
    vaultKind: 'sync',
    status: 'pending_deploy',
    serviceFeeBps: 500,
    partnerFeeBps: 1000,
  },
};

function partner(key: DemoPartner['key'], name: string, recipient: Address): DemoPartner {
  const environments = {} as Record<Environment, Record<ProductKey, DemoProduct>>;
  for (const env of ENVIRONMENTS) {
    const products = {} as Record<ProductKey, DemoProduct>;
    for (const productKey of PRODUCT_KEYS) {
      const t = TEMPLATES[productKey];
      const slug = `${key}-${env}-${t.suffix}`;
      const brand = name.split(' ')[0] ?? name;
      products[productKey] = {
        key: productKey,
        partnerKey: key,
        partnerName: name,
        environment: env,
        slug,
        displayName: `${brand} ${t.label}${env === 'test' ? ' (sandbox)' : ''}`,
        riskLabel: t.riskLabel,
        serviceFeeBps: t.serviceFeeBps,
        partnerFeeBps: t.partnerFeeBps,
        vaultKind: t.vaultKind,
        partnerRecipient: recipient,
        status: t.status,
        engineName: `${brand} ${t.label.split(' (')[0]} ${env}`,
        // e.g. yAL-CORE: partner initial, environment initial, product word.
        engineSymbol: `y${key[0]?.toUpperCase()}${env[0]?.toUpperCase()}-${t.suffix.split('-')[1]?.toUpperCase()}`,
      };
    }
    environments[env] = products;
  }
  return { key, name, partnerRecipient: recipient, environments };
}

export const DEMO_PARTNERS: readonly DemoPartner[] = [
  partner('acme', 'Acme Wallet', LOCAL_ROLES.acmePartnerRecipient),
  partner('bravo', 'Bravo Pay', LOCAL_ROLES.bravoPartnerRecipient),
];

/** Every product of every partner and environment, in a fixed order (deployment order). */
export function allDemoProducts(): DemoProduct[] {
  return DEMO_PARTNERS.flatMap((p) =>
    ENVIRONMENTS.flatMap((env) => PRODUCT_KEYS.map((k) => p.environments[env][k])),
  );
}

/** The products the local chain deploys (all but `pending_deploy`). */
export function deployedDemoProducts(): DemoProduct[] {
  return allDemoProducts().filter((p) => p.status !== 'pending_deploy');
}
