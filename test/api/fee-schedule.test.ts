/**
 * GET /api/partner/products/{slug}/fee-schedule against a real local chain: the fees in force, a
 * scheduled change with the moment it may apply (the engine's own notice period, read back from
 * the chain), null again once cancelled, and the document's shape for every answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { encodeFunctionData } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainClient, createChainClient } from '../../src/chain/client.ts';
import { yieldEngineAbi } from '../../src/chain/generated/index.ts';
import { ensureLocalChain, type LocalChain } from '../../src/chain/local/ensure.ts';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { buildTestApp } from '../helpers/builders.ts';
import { attachContractCheck, type ContractCheck } from '../helpers/contract.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { provisionFromDeployment } from '../helpers/local-products.ts';

describe('fee schedule on a local chain', () => {
  let dataDir: string;
  let chain: LocalChain;
  let t: TestDatabase;
  let app: Awaited<ReturnType<typeof buildTestApp>>;
  let contract: ContractCheck;
  let client: ChainClient;
  let key: string;
  const slug = 'acme-live-usdc-core';
  const get = (url: string) => app.inject({ url, headers: { 'x-api-key': key } });

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'pys-fees-'));
    chain = await ensureLocalChain({ dataDir, seed: 'fee-schedule', days: 2, port: 0 });
    t = await freshDatabase('pglite');
    const { partners } = await provisionFromDeployment(t.db, chain.deployment);
    key = (await createApiKeysRepo(t.db).create(partners.get('Acme Wallet')!, 'live')).key;
    const d = chain.deployment;
    client = createChainClient({ chainId: d.chainId, name: 'local', rpcUrls: [d.rpcUrl] });
    app = await buildTestApp({
      db: t.db,
      chains: [{ chainId: d.chainId, name: 'Local', evm: true, client }],
      chainReads: { timeoutMs: 1500, cacheMs: 0, headMs: 0 },
    });
    contract = attachContractCheck(app);
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await t?.drop();
    await chain?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const send = async (data: `0x${string}`) => {
    const hash = (await client.request({
      method: 'eth_sendTransaction',
      params: [
        { from: chain.deployment.deployer, to: chain.deployment.engines[slug]!.address, data },
      ],
    } as never)) as `0x${string}`;
    await client.waitForTransactionReceipt({ hash });
  };

  it('answers the fees in force, the engine’s, and no scheduled change', async () => {
    const res = await get(`/api/partner/products/${slug}/fee-schedule`);
    expect(res.statusCode).toBe(200);
    const engine = chain.deployment.engines[slug]!.address;
    const [service, partner] = await Promise.all(
      (['serviceFeeBps', 'partnerFeeBps'] as const).map((functionName) =>
        client.readContract({ address: engine, abi: yieldEngineAbi, functionName }),
      ),
    );
    const data = res.json().data;
    expect(data).toMatchObject({
      service_fee_bps: service,
      partner_fee_bps: partner,
      scheduled_change: null,
    });
    expect(data.last_block).toBeLessThanOrEqual(
      Number(await client.getBlockNumber({ cacheTime: 0 })),
    );
    expect(res.headers['cache-control']).toBe('private, max-age=60');
  });

  it('shows a scheduled increase and when it may apply, until it is cancelled', async () => {
    const before = (await get(`/api/partner/products/${slug}/fee-schedule`)).json().data;
    await send(
      encodeFunctionData({
        abi: yieldEngineAbi,
        functionName: 'setFees',
        args: [before.service_fee_bps, before.partner_fee_bps + 100],
      }),
    );
    try {
      const effectiveAt = await client.readContract({
        address: chain.deployment.engines[slug]!.address,
        abi: yieldEngineAbi,
        functionName: 'feeChangeEffectiveAt',
      });
      const data = (await get(`/api/partner/products/${slug}/fee-schedule`)).json().data;
      expect(data).toMatchObject({
        service_fee_bps: before.service_fee_bps,
        partner_fee_bps: before.partner_fee_bps,
        scheduled_change: {
          service_fee_bps: before.service_fee_bps,
          partner_fee_bps: before.partner_fee_bps + 100,
          may_apply_from: new Date(Number(effectiveAt) * 1000).toISOString(),
        },
      });
    } finally {
      await send(encodeFunctionData({ abi: yieldEngineAbi, functionName: 'cancelFeeChange' }));
    }
    const after = (await get(`/api/partner/products/${slug}/fee-schedule`)).json().data;
    expect(after.scheduled_change).toBeNull();
  });

  it('follows the product rules: an unknown slug is 404, a missing key 401', async () => {
    expect((await get('/api/partner/products/nope/fee-schedule')).json().code).toBe('not_found');
    const bare = await app.inject({ url: `/api/partner/products/${slug}/fee-schedule` });
    expect(bare.json().code).toBe('missing_api_key');
    expect(contract.checked()).toBeGreaterThan(0);
    expect(contract.violations()).toEqual([]);
  });
});
