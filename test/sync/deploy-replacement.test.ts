/**
 * A stuck engine deployment (src/sync/lifecycle/deployer.ts): priced under a base fee that then
 * rises, it stays pending; after replace_after_blocks blocks the worker replaces it at the same
 * nonce with higher fees, and exactly one engine is deployed and activated. A worker that restarts
 * between the replacement and its mining still finds the mined attempt.
 *
 * Stuck for real on anvil: automine off, and `anvil_setNextBlockBaseFeePerGas` raises the base fee of
 * each mined block above the deployment's max fee.
 */
import { parseGwei, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainSettings } from '../../src/chain/chains.ts';
import { createChainClient } from '../../src/chain/client.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createProductDeploysRepo } from '../../src/db/product-deploys.ts';
import { createProductsRepo, type Product } from '../../src/db/products.ts';
import { localChainSettings } from '../../src/sync/chain-runtime.ts';
import { createLifecycle } from '../../src/sync/lifecycle.ts';
import {
  type Fixture,
  mineBlock,
  OPERATOR,
  PARTNER,
  SERVICE,
  setupFixture,
} from '../chain/helpers.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

let fx: Fixture;
let t: TestDatabase;
const logs = captureLogger();

beforeAll(async () => {
  [fx, t] = await Promise.all([setupFixture(), freshDatabase('pglite')]);
});
afterAll(async () => {
  await Promise.all([fx?.stop(), t?.drop()]);
});

describe('a stuck engine deployment', () => {
  it('is replaced at the same nonce with higher fees; one engine is deployed and activated, across a restart', async () => {
    const chain: ChainSettings = {
      ...localChainSettings(fx.anvil.rpcUrl, fx.anvil.chainId),
      transactions: { maxFeePerGas: parseGwei('500'), replaceAfterBlocks: 2 },
    };
    const partner = await createPartnersRepo(t.db).create('Acme');
    let product: Product = await createProductsRepo(t.db).create({
      partnerId: partner.id,
      environment: 'test',
      slug: 'stuck-deploy',
      displayName: 'USDC Stuck',
      riskLabel: 'low',
      chainId: fx.anvil.chainId,
      vaultKind: 'sync',
      engineName: 'Stuck',
      engineSymbol: 'yS',
      underlyingVaultAddress: fx.syncVault,
      assetAddress: fx.asset,
      assetSymbol: 'USDC',
      assetDecimals: 6,
      serviceFeeBps: 500,
      partnerFeeBps: 1000,
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
    });
    const reload = async () =>
      (product = (await createProductsRepo(t.db).getById(product.id)) as Product);
    const worker = (holder: string) =>
      createLifecycle({
        db: t.db,
        logger: logs.logger,
        chain,
        client: createChainClient(chain),
        holder,
        leaseTtlMs: 300,
      });
    const mineAtBaseFee = async (fee: bigint) => {
      await fx.rpc('anvil_setNextBlockBaseFeePerGas', [toHex(fee)]);
      await mineBlock(fx);
    };
    const nonceBefore = await fx.client.getTransactionCount({ address: OPERATOR });

    await worker('w1').tick();
    const first = (await reload()).deployTxHash!;
    expect(first).toMatch(/^0x/);
    const firstTx = await fx.client.getTransaction({ hash: first });
    const high = firstTx.maxFeePerGas! * 10n;
    for (let i = 0; i < 2; i++) await mineAtBaseFee(high);
    await expect(fx.client.getTransactionReceipt({ hash: first })).rejects.toThrow();

    await worker('w1').tick();
    const second = (await reload()).deployTxHash!;
    expect(second).not.toBe(first);
    const secondTx = await fx.client.getTransaction({ hash: second });
    expect(secondTx.nonce).toBe(firstTx.nonce);
    expect(secondTx.maxFeePerGas!).toBeGreaterThanOrEqual((firstTx.maxFeePerGas! * 11n) / 10n);
    expect(secondTx.maxPriorityFeePerGas!).toBeGreaterThanOrEqual(
      (firstTx.maxPriorityFeePerGas! * 11n) / 10n,
    );
    expect((await createProductDeploysRepo(t.db).attempts(product.id)).prior).toEqual([first]);
    expect(logs.lines().some((l) => l.includes('engine deployment not mined after 2 blocks'))).toBe(
      true,
    );

    // Mined, then a new worker (a restart) follows it to depth and activates the product.
    await mineAtBaseFee(high);
    const receipt = await fx.client.getTransactionReceipt({ hash: second });
    expect(receipt.status).toBe('success');
    for (let i = 0; i < 2; i++) await mineBlock(fx);
    await new Promise((r) => setTimeout(r, 400)); // w1's chain lease expires: it died
    const after = await worker('w2').tick();
    expect(after.deployed).toEqual(['stuck-deploy']);
    expect((await reload()).status).toBe('active');
    expect(product.engineAddress?.toLowerCase()).toBe(receipt.contractAddress?.toLowerCase());
    // One deployment: the signer's nonce moved by one.
    expect(await fx.client.getTransactionCount({ address: OPERATOR })).toBe(nonceBefore + 1);
  });
});
