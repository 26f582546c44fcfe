/**
 * The exit follower on a real anvil and real databases: a request of an own-ids underlying
 * (AsyncYieldVault) followed pending → claimable (one `redeem.claimable`, with the assets the engine
 * itself would pay at that block and the claim call) → claimed; a request claimed before the
 * follower saw it claimable sends nothing; a pooled-id underlying (PooledAsyncVault) is claimable
 * once its fulfilment covers the request, with nobody calling `settleRequests()`.
 */
import {
  type Abi,
  type Address,
  encodeFunctionData,
  formatUnits,
  getAddress,
  type Hex,
} from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createChainClient,
  createChainWallet,
  endpointOf,
  LOCAL_NODE_WALLET,
} from '../../src/chain/client.ts';
import { deployContract } from '../../src/chain/deploy.ts';
import {
  pooledAsyncVaultAbi,
  pooledAsyncVaultBytecode,
  testUSDAbi,
  yieldEngineAbi,
} from '../../src/chain/generated/index.ts';
import type { Database } from '../../src/db/client.ts';
import { createRedeemRequestsRepo } from '../../src/db/redeem-requests.ts';
import { createExitFollower } from '../../src/sync/exits.ts';
import {
  engineEvents,
  engineWrite,
  type Fixture,
  newEngine,
  OPERATOR,
  send,
  setupFixture,
  USD,
  USERS,
  warp,
} from '../chain/helpers.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import {
  chainSettings,
  engineProduct,
  makeIndexer,
  mine,
  registerProduct,
  storedEvents,
} from './helpers-indexer.ts';

let fx: Fixture;
beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

const [, BOB, CAROL] = USERS as [Address, Address, Address];

function follower(db: Database) {
  const chain = chainSettings(fx);
  return createExitFollower({
    db,
    logger: captureLogger().logger,
    chain,
    client: createChainClient(chain, { timeoutMs: 5_000 }),
    holder: 'worker-a',
  });
}

async function request(engine: Address, user: Address, whole: bigint) {
  const dep = await engineWrite(fx, engine, user, { fn: 'deposit', args: [whole * USD, user] });
  const req = await engineWrite(fx, engine, user, {
    fn: 'requestRedeem',
    args: [dep.preview, user, user],
  });
  const ev = engineEvents(req.receipt, engine).find((e) => e.eventName === 'RedeemRequested');
  return { requestId: (ev!.args as { requestId: bigint }).requestId, shares: dep.preview };
}

/** The indexer's redeem.requested, then a follower round. */
async function round(db: Database) {
  await mine(fx, 2);
  await makeIndexer(fx, db, captureLogger().logger).runOnce();
  return follower(db).runOnce();
}

describe.each(storageEngines())('exit follower on %s', (engineName) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const open = async () => {
    const t = await freshDatabase(engineName);
    opened.push(t);
    return t.db;
  };

  it('own ids: pending, then redeem.claimable once with the engine-computed due and the claim call, then claimed', async () => {
    const db = await open();
    const { engine, product } = await engineProduct(fx, db, 'async');
    const { requestId, shares } = await request(engine, BOB, 1_000n);
    expect(await round(db)).toMatchObject({ leased: true, followed: 1, claimable: 0 });
    const repo = createRedeemRequestsRepo(db);
    const [row] = await repo.openFor(product.id, BOB);
    expect(row).toMatchObject({ requestId, controller: BOB, owner: BOB, shares, state: 'pending' });

    await warp(fx, 86_400);
    const r = await round(db);
    expect(r).toMatchObject({ followed: 0, claimable: 1 });
    const events = await storedEvents(db, 'redeem.claimable');
    expect(events).toHaveLength(1);
    const payload = JSON.parse(events[0]!.payload) as Record<string, unknown> & {
      block_number: number;
      assets: string;
      claim: { data: Hex };
    };
    const claimData = encodeFunctionData({
      abi: yieldEngineAbi,
      functionName: 'claimRedeem',
      args: [requestId, BOB],
    });
    // The due is the engine's answer to the claim at that block.
    const { data: due } = await fx.client.call({
      account: BOB,
      to: engine,
      data: claimData,
      blockNumber: BigInt(payload.block_number),
    });
    const claimableAt = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'claimableAt',
      args: [requestId],
    });
    expect(payload).toEqual({
      slug: product.slug,
      chain_id: fx.anvil.chainId,
      request_id: `0x${requestId.toString(16)}`,
      user_address: BOB,
      shares: formatUnits(shares, 12),
      assets: formatUnits(BigInt(due!), 6),
      asset_symbol: 'TUSD',
      claimable_at: new Date(Number(claimableAt) * 1000).toISOString().replace('.000Z', 'Z'),
      block_number: payload.block_number,
      claim: {
        to: getAddress(engine),
        function: 'claimRedeem(uint256,address)',
        receiver: BOB,
        data: claimData,
      },
    });
    expect((await repo.openFor(product.id, BOB))[0]).toMatchObject({
      state: 'claimable',
      claimableEventId: events[0]!.id,
    });

    // Further rounds send nothing more.
    expect(await round(db)).toMatchObject({ claimable: 0 });
    await engineWrite(fx, engine, BOB, { fn: 'claimRedeem', args: [requestId, BOB] });
    expect(await round(db)).toMatchObject({ claimed: 1 });
    expect(await repo.openFor(product.id, BOB)).toEqual([]);
    expect(await round(db)).toMatchObject({ followed: 0, claimable: 0, claimed: 0 });
    expect(await storedEvents(db, 'redeem.claimable')).toHaveLength(1);
  });

  it('a request claimed before the follower found it claimable sends nothing', async () => {
    const db = await open();
    const { engine, product } = await engineProduct(fx, db, 'async');
    const { requestId } = await request(engine, CAROL, 50n);
    await warp(fx, 86_400);
    await engineWrite(fx, engine, CAROL, { fn: 'claimRedeem', args: [requestId, CAROL] });
    expect(await round(db)).toMatchObject({ followed: 1, claimable: 0, claimed: 1 });
    expect(await storedEvents(db, 'redeem.claimable')).toEqual([]);
    expect(await createRedeemRequestsRepo(db).openFor(product.id, CAROL)).toEqual([]);
  });

  it('pooled ids: claimable once the upstream fulfilment covers it, with nobody calling settleRequests()', async () => {
    const db = await open();
    await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
    await fx.rpc('evm_setAutomine', [true]);
    let vault: Address;
    try {
      vault = (
        await deployContract(
          createChainWallet(
            endpointOf(fx.anvil.rpcUrl, fx.anvil.chainId),
            OPERATOR,
            LOCAL_NODE_WALLET,
          ),
          fx.client,
          pooledAsyncVaultAbi as Abi,
          pooledAsyncVaultBytecode,
          [fx.asset, 'Pooled', 'pUSD', OPERATOR, 0n],
        )
      ).address;
    } finally {
      await fx.rpc('evm_setAutomine', [false]);
    }
    await send(
      fx,
      OPERATOR,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [vault, true] }),
    );
    const before = await fx.client.getBlockNumber({ cacheTime: 0 });
    const engine = await newEngine(fx, vault);
    const product = await registerProduct(fx, db, 'async', { engine, block: before + 1n });
    const { requestId } = await request(engine, BOB, 300n);
    expect(await round(db)).toMatchObject({ followed: 1, claimable: 0 });
    const uShares = (
      (await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'redeemRequest',
        args: [requestId],
      })) as { underlyingShares: bigint }
    ).underlyingShares;
    await send(
      fx,
      OPERATOR,
      vault,
      encodeFunctionData({
        abi: pooledAsyncVaultAbi,
        functionName: 'fulfillRedeem',
        args: [engine, uShares],
      }),
    );
    expect(await round(db)).toMatchObject({ claimable: 1 });
    const [event] = await storedEvents(db, 'redeem.claimable');
    expect(JSON.parse(event!.payload)).toMatchObject({
      slug: product.slug,
      request_id: `0x${requestId.toString(16)}`,
    });
    await engineWrite(fx, engine, BOB, { fn: 'claimRedeem', args: [requestId, BOB] });
    expect(await round(db)).toMatchObject({ claimed: 1 });
  });
});
