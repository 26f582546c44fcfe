/**
 * Log indexer on a real anvil and real databases: events after the confirmation depth and never
 * before, exact payloads, the async redeem lifecycle, reorgs above and below the depth, a crash in
 * the middle of a range, and engines added after the cursor passed their deployment.
 */
import type { Address, Hex } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { yieldEngineAbi } from '../../src/chain/generated/YieldEngine.ts';
import { createCursorsRepo } from '../../src/db/cursors.ts';
import { isoSeconds } from '../../src/sync/indexer/events.ts';
import { TOPICS } from '../../src/sync/indexer/logs.ts';
import {
  engineEvents,
  engineWrite,
  type Fixture,
  setupFixture,
  USD,
  USERS,
  warp,
} from '../chain/helpers.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import {
  deployTestEngine,
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

const [ALICE, BOB, CAROL] = USERS as [Address, Address, Address];

async function deposit(engine: Address, user: Address, whole: bigint) {
  return engineWrite(fx, engine, user, { fn: 'deposit', args: [whole * USD, user] });
}

async function blockTime(n: bigint): Promise<number> {
  return Number((await fx.client.getBlock({ blockNumber: n })).timestamp);
}

describe.each(storageEngines())('log indexer on %s', (engineName) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });
  const open = async () => {
    const t = await freshDatabase(engineName);
    opened.push(t);
    return t.db;
  };

  it('stores N deposit.confirmed after the depth and none before, with the exact payload', async () => {
    const db = await open();
    const { engine, product } = await engineProduct(fx, db, 'sync');
    const { logger } = captureLogger();
    const indexer = makeIndexer(fx, db, logger);
    const receipts = [];
    for (let i = 0; i < 5; i++)
      receipts.push((await deposit(engine, ALICE, 100n + BigInt(i))).receipt);

    // Head is the last deposit's block; depth 2 leaves the last two unconfirmed.
    const r1 = await indexer.runOnce();
    expect(r1.leased).toBe(true);
    expect((await storedEvents(db)).map((e) => e.txHash)).toEqual(
      receipts.slice(0, 3).map((r) => r.transactionHash),
    );
    await mine(fx, 1);
    await indexer.runOnce();
    expect(await storedEvents(db)).toHaveLength(4);
    await mine(fx, 1);
    await indexer.runOnce();
    await mine(fx, 3);
    const again = await indexer.runOnce();
    expect(again.events).toBe(0);
    const events = await storedEvents(db);
    expect(events.map((e) => e.txHash)).toEqual(receipts.map((r) => r.transactionHash));
    expect(new Set(events.map((e) => e.eventType))).toEqual(new Set(['deposit.confirmed']));

    // Payload: exactly the spec's fields in the spec's order, computed here from the receipt.
    const receipt = receipts[2]!;
    const decoded = engineEvents(receipt, engine).find((e) => e.eventName === 'Deposit');
    const args = decoded!.args as { owner: Address; assets: bigint; shares: bigint };
    const log = receipt.logs.find(
      (l) => l.address.toLowerCase() === engine.toLowerCase() && l.topics[0] === TOPICS.deposit,
    )!;
    const t = await blockTime(receipt.blockNumber);
    const expected = {
      slug: product.slug,
      chain_id: fx.anvil.chainId,
      tx_hash: receipt.transactionHash,
      block_number: Number(receipt.blockNumber),
      log_index: log.logIndex,
      user_address: ALICE,
      amount: '102',
      shares: `${args.shares / 10n ** 12n}${fraction(args.shares, 12)}`,
      asset_symbol: 'TUSD',
      occurred_at: new Date(t * 1000).toISOString().replace('.000Z', 'Z'),
    };
    expect(args.owner).toBe(ALICE);
    expect(args.assets).toBe(102n * USD);
    const stored = events[2]!;
    expect(stored.payload).toBe(JSON.stringify(expected));
    expect(stored.payload).toMatch(/"occurred_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"}$/);
    expect(stored.dedupeKey).toBe(
      `deposit.confirmed:${fx.anvil.chainId}:${receipt.transactionHash.toLowerCase()}:${log.logIndex}`,
    );
    expect(stored.partnerId).toBe(product.partnerId);
    expect(stored.productId).toBe(product.id);
    expect(stored.environment).toBe('live');
    expect(stored.blockNumber).toBe(receipt.blockNumber);
    expect(stored.occurredAt.getTime()).toBe(t * 1000);
    const { rows } = await db.query<{ block_hash: string }>(
      'SELECT block_hash FROM events WHERE id = $1',
      [stored.id],
    );
    expect(rows[0]?.block_hash).toBe(receipt.blockHash);
  });

  it('async engine: redeem.requested then redeem.confirmed on claim, with the settlement time', async () => {
    const db = await open();
    const { engine } = await engineProduct(fx, db, 'async');
    const dep = await deposit(engine, BOB, 1_000n);
    const shares = dep.preview;
    const req = await engineWrite(fx, engine, BOB, {
      fn: 'requestRedeem',
      args: [shares / 2n, BOB, BOB],
    });
    const requested = engineEvents(req.receipt, engine).find(
      (e) => e.eventName === 'RedeemRequested',
    );
    const requestId = (requested!.args as { requestId: bigint }).requestId;
    await warp(fx, 86_400);
    const claim = await engineWrite(fx, engine, BOB, { fn: 'claimRedeem', args: [requestId, BOB] });
    const withdraw = engineEvents(claim.receipt, engine).find((e) => e.eventName === 'Withdraw');
    const wArgs = withdraw!.args as { assets: bigint; shares: bigint; owner: Address };
    await mine(fx, 2);
    await makeIndexer(fx, db, captureLogger().logger).runOnce();

    const events = await storedEvents(db);
    expect(events.map((e) => e.eventType)).toEqual([
      'deposit.confirmed',
      'redeem.requested',
      'redeem.confirmed',
    ]);
    const reqPayload = JSON.parse(events[1]!.payload) as Record<string, unknown>;
    expect(Object.keys(reqPayload)).toEqual([
      'slug',
      'chain_id',
      'tx_hash',
      'log_index',
      'user_address',
      'shares',
      'request_id',
      'estimated_settlement_at',
      'occurred_at',
    ]);
    const requestTime = await blockTime(req.receipt.blockNumber);
    const claimableAt = await fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName: 'claimableAt',
      args: [requestId],
    });
    // The vault's settlement delay is one day (fixture): the engine's claimableAt says the same.
    expect(Number(claimableAt)).toBe(requestTime + 86_400);
    expect(reqPayload).toMatchObject({
      tx_hash: req.receipt.transactionHash,
      user_address: BOB,
      shares: `${shares / 2n / 10n ** 12n}${fraction(shares / 2n, 12)}`,
      request_id: `0x${requestId.toString(16)}`,
      estimated_settlement_at: isoSeconds(requestTime + 86_400),
      occurred_at: isoSeconds(requestTime),
    });
    const confirmed = JSON.parse(events[2]!.payload) as Record<string, unknown>;
    expect(Object.keys(confirmed)).toEqual([
      'slug',
      'chain_id',
      'tx_hash',
      'block_number',
      'log_index',
      'user_address',
      'amount',
      'shares',
      'asset_symbol',
      'occurred_at',
    ]);
    expect(wArgs.owner).toBe(BOB);
    expect(confirmed).toMatchObject({
      tx_hash: claim.receipt.transactionHash,
      user_address: BOB,
      amount: `${wArgs.assets / USD}${fraction(wArgs.assets, 6)}`,
      shares: `${wArgs.shares / 10n ** 12n}${fraction(wArgs.shares, 12)}`,
    });
  });

  it('sync engine: a redeem gives redeem.confirmed and no redeem.requested', async () => {
    const db = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const dep = await deposit(engine, CAROL, 50n);
    await engineWrite(fx, engine, CAROL, { fn: 'redeem', args: [dep.preview, CAROL, CAROL] });
    await mine(fx, 2);
    await makeIndexer(fx, db, captureLogger().logger).runOnce();
    expect((await storedEvents(db)).map((e) => e.eventType)).toEqual([
      'deposit.confirmed',
      'redeem.confirmed',
    ]);
  });

  it('a reorg shallower than the depth yields no event for the orphaned log', async () => {
    const db = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const indexer = makeIndexer(fx, db, captureLogger().logger);
    await deposit(engine, ALICE, 10n);
    await mine(fx, 2);
    await indexer.runOnce();
    const snapshot = (await fx.rpc('evm_snapshot', [])) as Hex;
    const orphan = await deposit(engine, BOB, 77n);
    await mine(fx, 1); // the orphan is 1 block deep: above the depth
    await indexer.runOnce();
    expect(await storedEvents(db)).toHaveLength(1);

    await fx.rpc('evm_revert', [snapshot]);
    await fx.rpc('anvil_dropAllTransactions', []);
    const replacement = await deposit(engine, CAROL, 88n);
    await mine(fx, 3);
    await indexer.runOnce();
    const events = await storedEvents(db);
    const hashes = events.map((e) => e.txHash);
    expect(hashes).not.toContain(orphan.receipt.transactionHash);
    expect(hashes).toContain(replacement.receipt.transactionHash);
    expect(events).toHaveLength(2);
  });

  it('a reorg deeper than the depth is logged, rewound and re-indexed; the orphan event is retracted', async () => {
    const db = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const { logger, lines } = captureLogger();
    const indexer = makeIndexer(fx, db, logger);
    await mine(fx, 3);
    await indexer.runOnce();
    const snapshot = (await fx.rpc('evm_snapshot', [])) as Hex;
    const orphan = await deposit(engine, BOB, 5n);
    await mine(fx, 3);
    await indexer.runOnce();
    expect((await storedEvents(db)).map((e) => e.txHash)).toEqual([orphan.receipt.transactionHash]);

    await fx.rpc('evm_revert', [snapshot]);
    await fx.rpc('anvil_dropAllTransactions', []);
    const replacement = await deposit(engine, CAROL, 6n);
    await mine(fx, 6);
    await indexer.runOnce();
    expect(lines().some((l) => l.includes('reorg deeper than the confirmation depth'))).toBe(true);
    // Stored events cannot be unsent: the orphan's event stays, retracted, with a
    // chain_event.retracted naming it; the new chain's event is added.
    const { rows } = await db.query<{ id: string; tx_hash: string; retracted_by: string | null }>(
      `SELECT id, tx_hash, retracted_by FROM events WHERE event_type = 'deposit.confirmed' ORDER BY seq`,
    );
    expect(rows.map((r) => r.tx_hash)).toEqual([
      orphan.receipt.transactionHash,
      replacement.receipt.transactionHash,
    ]);
    const notice = (await storedEvents(db, 'chain_event.retracted'))[0]!;
    expect(rows[0]!.retracted_by).toBe(notice.id);
    expect(rows[1]!.retracted_by).toBeNull();
    expect(JSON.parse(notice.payload)).toMatchObject({
      retracted_event_id: rows[0]!.id,
      retracted_event_type: 'deposit.confirmed',
      tx_hash: orphan.receipt.transactionHash,
      reason: 'reorg',
    });
    // occurred_at, like every event's, is when the service found the block gone.
    const payload = JSON.parse(notice.payload) as { detected_at: string; occurred_at: string };
    expect(payload.occurred_at).toBe(payload.detected_at);
    const cursor = await createCursorsRepo(db).get(fx.anvil.chainId);
    const block = await fx.client.getBlock({ blockNumber: cursor!.blockNumber });
    expect(cursor!.blockHash).toBe(block.hash);
  });

  it('a crash in the middle of a range loses nothing and duplicates nothing on resume', async () => {
    const db = await open();
    const { engine } = await engineProduct(fx, db, 'sync');
    const receipts = [];
    for (let i = 0; i < 6; i++)
      receipts.push((await deposit(engine, ALICE, 1n + BigInt(i))).receipt);
    await mine(fx, 2);
    let chunks = 0;
    const crashing = makeIndexer(fx, db, captureLogger().logger, {
      chain: { ...chainSettingsOf(), blockRangeLimit: 3 },
      insertChunk: 1,
      afterInsertChunk: () => {
        // Dies on the 4th row written: the first range (3 blocks) has committed by then.
        if (++chunks === 4) throw new Error('simulated crash');
      },
    });
    await expect(crashing.runOnce()).rejects.toThrow('simulated crash');
    const cursor = await createCursorsRepo(db).get(fx.anvil.chainId);
    const partial = await storedEvents(db);
    // Whatever committed is exactly the logs up to the cursor: no gap behind it.
    const upToCursor = receipts.filter((r) => r.blockNumber <= cursor!.blockNumber);
    expect(partial.map((e) => e.txHash)).toEqual(upToCursor.map((r) => r.transactionHash));
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(6);

    const round = await makeIndexer(fx, db, captureLogger().logger).runOnce();
    expect(round.fromBlock).toBe(cursor!.blockNumber + 1n);
    const events = await storedEvents(db);
    expect(events.map((e) => e.txHash)).toEqual(receipts.map((r) => r.transactionHash));
    expect(new Set(events.map((e) => e.dedupeKey)).size).toBe(6);
  });

  it('an engine registered after the cursor passed its deployment is indexed from its deployed block', async () => {
    const db = await open();
    const { engine: a } = await engineProduct(fx, db, 'sync');
    const indexer = makeIndexer(fx, db, captureLogger().logger);
    await deposit(a, ALICE, 1n);
    const late = await deployTestEngine(fx, 'sync');
    const early = await deposit(late.engine, BOB, 2n);
    await mine(fx, 3);
    await indexer.runOnce();
    expect(await storedEvents(db)).toHaveLength(1);
    await registerProduct(fx, db, 'sync', late);
    await indexer.runOnce();
    const events = await storedEvents(db);
    expect(events.map((e) => e.txHash)).toContain(early.receipt.transactionHash);
    expect(events).toHaveLength(2);
  });

  function chainSettingsOf() {
    return {
      chainId: fx.anvil.chainId,
      name: 'test',
      rpcUrls: [fx.anvil.rpcUrl],
      confirmationDepth: 2,
      blockRangeLimit: 10_000,
      evm: true,
    };
  }
});

/** The fractional part of base/10^decimals as formatUnits writes it ("" or ".digits"). */
function fraction(base: bigint, decimals: number): string {
  const f = (base % 10n ** BigInt(decimals)).toString().padStart(decimals, '0').replace(/0+$/, '');
  return f ? `.${f}` : '';
}
