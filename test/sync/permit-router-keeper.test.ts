/**
 * The lifecycle deploys the permit deposit router beside the engines: on a chain with a product and
 * no router (a plain anvil, no fixture), one round sends its CREATE2 deployment through the signer's
 * transaction sender, later rounds send nothing more, and the router is then at its computed
 * address; a chain with no product gets none.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { DEV_ADDRESSES } from '../../src/chain/local/accounts.ts';
import { type AnvilHandle, startAnvil } from '../../src/chain/local/anvil.ts';
import { permitRouterAddress } from '../../src/chain/permit-router.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductDeploysRepo } from '../../src/db/product-deploys.ts';
import { createProductsRepo } from '../../src/db/products.ts';
import { localChainSettings } from '../../src/sync/chain-runtime.ts';
import { createLifecycle } from '../../src/sync/lifecycle.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

let anvil: AnvilHandle;
let t: TestDatabase;
beforeAll(async () => {
  anvil = await startAnvil({});
});
afterAll(() => anvil?.stop());
afterEach(() => t?.drop());

const chain = () => localChainSettings(anvil.rpcUrl, anvil.chainId);
const lifecycle = () =>
  createLifecycle({
    db: t.db,
    logger: captureLogger().logger,
    chain: chain(),
    client: createChainClient(chain()),
    holder: 'worker-1',
  });
const hasRouter = async () => {
  const code = await createChainClient(chain()).getCode({ address: permitRouterAddress() });
  return code !== undefined && code !== '0x';
};
const operatorNonce = () =>
  createChainClient(chain()).getTransactionCount({ address: DEV_ADDRESSES[0]! });

describe('the permit router keeper', () => {
  it('sends nothing on a chain with no product', async () => {
    t = await freshDatabase('pglite');
    const nonce = await operatorNonce();
    await lifecycle().tick();
    expect(await hasRouter()).toBe(false);
    expect(await operatorNonce()).toBe(nonce);
  });

  it('deploys the router once on a chain with a product, at its computed address', async () => {
    t = await freshDatabase('pglite');
    const partner = await createPartnersRepo(t.db).create('Acme');
    // A held pending product: the chain has a product, and no engine deployment competes.
    const p = await createProductsRepo(t.db).create({
      partnerId: partner.id,
      environment: 'live',
      slug: 'held',
      displayName: 'Held',
      riskLabel: 'low',
      chainId: anvil.chainId,
      vaultKind: 'sync',
      engineName: 'E',
      engineSymbol: 'e',
      underlyingVaultAddress: DEV_ADDRESSES[5]!,
      assetAddress: DEV_ADDRESSES[6]!,
      assetSymbol: 'TUSD',
      assetDecimals: 6,
      serviceFeeBps: 500,
      partnerFeeBps: 1000,
      serviceFeeRecipient: DEV_ADDRESSES[1]!,
      partnerFeeRecipient: DEV_ADDRESSES[2]!,
    });
    expect(await createProductDeploysRepo(t.db).setHold(p.id, true)).toBe(true);
    const nonce = await operatorNonce();
    const worker = lifecycle();
    await worker.tick();
    // anvil mines on arrival: the router is there after one round.
    expect(await hasRouter()).toBe(true);
    const { rows } = await t.db.query<{ purpose: string; status: string }>(
      'SELECT purpose, status FROM chain_transactions',
    );
    expect(rows.map((r) => r.purpose)).toContain('deploy the permit deposit router');
    for (let i = 0; i < 3; i++) await worker.tick();
    // One transaction in all: the router's (the held product deploys nothing).
    expect(await operatorNonce()).toBe(nonce + 1);
    const routerTxs = (
      await t.db.query<{ n: string }>(
        "SELECT count(*) AS n FROM chain_transactions WHERE purpose = 'deploy the permit deposit router'",
      )
    ).rows[0]!.n;
    expect(Number(routerTxs)).toBe(1);
  });
});
