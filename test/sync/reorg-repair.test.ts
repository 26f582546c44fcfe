/**
 * A reorganisation deeper than the confirmation depth, across a finished day, repaired. On a real
 * anvil: two days of deposits are indexed and their daily rows computed; then the chain is taken
 * back (evm_revert) to the middle of the second day and grows another way (other deposits, the day
 * closed on other blocks). After the indexer and the metrics processor run again, the stored events
 * (less the retracted ones), the daily rows, fee-stats and APY history must equal those of a fresh
 * index of the chain as it now is, and a real HTTPS receiver must have received one
 * `chain_event.retracted` per orphaned event, naming it.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Address, Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import type { Database } from '../../src/db/client.ts';
import { createInboundEventsRepo } from '../../src/db/inbound-events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import type { Product } from '../../src/db/products.ts';
import { createSnapshotReads } from '../../src/db/snapshot-reads.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createMetricsProcessor } from '../../src/sync/metrics.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import {
  engineWrite,
  type Fixture,
  mineBlock,
  setupFixture,
  USD,
  USERS,
  warp,
} from '../chain/helpers.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';
import {
  chainSettings,
  deployTestEngine,
  makeIndexer,
  mine,
  registerProduct,
} from './helpers-indexer.ts';

const DAY = 86_400;
const [ALICE, BOB, CAROL] = USERS as [Address, Address, Address];

let fx: Fixture;
beforeAll(async () => {
  fx = await setupFixture();
});
afterAll(async () => {
  await fx?.stop();
});

/** Chain events still standing, comparable across databases. */
async function standingEvents(db: Database): Promise<string[]> {
  const { rows } = await db.query<{
    event_type: string;
    tx_hash: string;
    log_index: number;
    payload: string;
  }>(
    `SELECT event_type, tx_hash, log_index, payload FROM events
      WHERE tx_hash IS NOT NULL AND retracted_at IS NULL ORDER BY block_number, log_index, event_type`,
  );
  return rows.map((r) => `${r.event_type} ${r.tx_hash}:${r.log_index} ${r.payload}`);
}

/** Daily rows without created_at, by date. */
async function dailyRows(db: Database): Promise<string[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    'SELECT * FROM daily_snapshots ORDER BY date',
  );
  return rows.map((r) => {
    const { created_at: _c, product_id: _p, ...rest } = r;
    return JSON.stringify(rest, (_k, v) => (v instanceof Date ? v.toISOString() : v));
  });
}

describe.each(storageEngines())('deep reorg across a finished day on %s', (engineName) => {
  const opened: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((t) => t.drop()));
  });
  const open = async () => {
    const t = await freshDatabase(engineName);
    opened.push(t);
    return t.db;
  };

  it('retracts the orphaned events, recomputes the day, and equals a fresh index of the chain', async () => {
    const db = await open();
    const deployed = await deployTestEngine(fx, 'sync');
    const product: Product = await registerProduct(fx, db, 'sync', deployed);
    const engine = deployed.engine;
    const deposit = (who: Address, usd: bigint) =>
      engineWrite(fx, engine, who, { fn: 'deposit', args: [usd * USD, who] });

    // A real HTTPS receiver subscribed to everything, and a running dispatcher.
    const box = createSecretBox(randomBytes(32));
    const partner = (await createPartnersRepo(db).findByName('Acme'))!;
    const receiver = await startHttpsReceiver();
    await createWebhookDestinationsRepo(db, box).add({
      partnerId: partner.id,
      environment: 'live',
      url: receiver.url,
    });
    const sender = createSender({
      policy: createAddressPolicy(parseCidrList('127.0.0.0/8,::1/128')),
      extraCa: testCaPem(),
    });
    const job = createDispatcher({
      db,
      logger: captureLogger().logger,
      sender,
      secretBox: box,
      retryDelaysMs: [50, 50],
      pollMs: 20,
    }).job();
    job.start();

    const { logger, lines } = captureLogger();
    const indexer = makeIndexer(fx, db, logger);
    const nowOfChain = () => new Date(fx.now * 1000);
    const metrics = (on: Database) =>
      createMetricsProcessor({
        db: on,
        logger,
        chain: chainSettings(fx),
        client: createChainClient(chainSettings(fx)),
        now: nowOfChain,
      });
    try {
      // Day 1 (the deployment day) and the start of day 2.
      const dayStart = (Math.floor(fx.now / DAY) + 1) * DAY;
      await deposit(ALICE, 100n);
      fx.now = dayStart + 3600; // day 2, 01:00
      await deposit(BOB, 200n);
      const forkPoint = (await fx.rpc('evm_snapshot', [])) as Hex;

      // The branch that will be orphaned: 480 USD of deposits on day 2, then day 3 begins.
      fx.now = dayStart + 7200;
      const orphanA = await deposit(CAROL, 300n);
      const orphanB = await deposit(ALICE, 180n);
      fx.now = dayStart + DAY + 60; // day 3
      await mineBlock(fx);
      await mine(fx, 3);
      await indexer.runOnce();
      await metrics(db).runOnce();
      // The partner had submitted the first orphaned transaction (inbound webhook): linked now.
      const inbound = createInboundEventsRepo(db);
      const body = JSON.stringify({ tx_hash: orphanA.receipt.transactionHash });
      const submitted = await inbound.store({
        partnerId: partner.id,
        environment: 'live',
        idempotencyKey: 'reorg-1',
        eventType: 'deposit.submitted',
        bodySha256: createHash('sha256').update(body).digest(),
        body,
        occurredAt: new Date(),
        tx: {
          productId: product.id,
          chainId: fx.anvil.chainId,
          txHash: orphanA.receipt.transactionHash.toLowerCase(),
        },
      });
      expect(submitted.event.linkedEventId).toMatch(/^evt_/);
      const before = await dailyRows(db);
      expect(before.length).toBe(2); // days 1 and 2 are closed
      expect(before[1]).toContain('"deposits_assets":"680000000"'); // 200 + 300 + 180

      // The reorganisation: back to day 2, 01:00; other deposits; day 3 closes on other blocks.
      await fx.rpc('evm_revert', [forkPoint]);
      await fx.rpc('anvil_dropAllTransactions', []);
      fx.now = dayStart + 5400;
      await deposit(CAROL, 75n);
      fx.now = dayStart + DAY + 120;
      await warp(fx, 0);
      await mine(fx, 6);
      await indexer.runOnce();
      await metrics(db).runOnce();

      expect(lines().some((l) => l.includes('reorg deeper than the confirmation depth'))).toBe(
        true,
      );
      expect(
        lines().some((l) => l.includes('daily rows of blocks the chain no longer has removed')),
      ).toBe(true);

      // A fresh index of the chain as it now is.
      const fresh = await open();
      await registerProduct(fx, fresh, 'sync', deployed, product.slug);
      await makeIndexer(fx, fresh, captureLogger().logger).runOnce();
      await metrics(fresh).runOnce();

      expect(await standingEvents(db)).toEqual(await standingEvents(fresh));
      const after = await dailyRows(db);
      expect(after).toEqual(await dailyRows(fresh));
      expect(after[1]).toContain('"deposits_assets":"275000000"'); // 200 + 75
      const freshProduct = (await fresh.query<{ id: string }>('SELECT id FROM products')).rows[0]!
        .id;
      const reads = [createSnapshotReads(db), createSnapshotReads(fresh)] as const;
      const [feesA, feesB] = await Promise.all(
        reads.map((r, i) => r.feeStats(i ? freshProduct : product.id, '2000-01-01', '2100-01-01')),
      );
      const [apyA, apyB] = await Promise.all(
        reads.map((r, i) =>
          r.apyHistory(i ? freshProduct : product.id, '2000-01-01', '2100-01-01'),
        ),
      );
      const strip = (v: unknown) =>
        JSON.stringify(v, (k, x) =>
          k === 'productId' ? undefined : typeof x === 'bigint' ? x.toString() : x,
        );
      expect(strip(feesA)).toBe(strip(feesB));
      expect(strip(apyA)).toBe(strip(apyB));

      // One retraction per orphaned event, delivered to the receiver, naming it.
      const orphans = (
        await db.query<{ id: string; tx_hash: string; retracted_by: string }>(
          'SELECT id, tx_hash, retracted_by FROM events WHERE retracted_at IS NOT NULL ORDER BY block_number',
        )
      ).rows;
      expect(orphans.map((o) => o.tx_hash)).toEqual([
        orphanA.receipt.transactionHash,
        orphanB.receipt.transactionHash,
      ]);
      const retractions = await waitFor(
        async () => {
          const got = receiver.requests
            .map((r) => ({
              id: String(r.headers['webhook-id']),
              body: JSON.parse(r.body.toString()) as Record<string, unknown>,
            }))
            .filter((r) => r.body.reason === 'reorg');
          return got.length >= orphans.length ? got : undefined;
        },
        20_000,
        'the retractions delivered',
      );
      expect(retractions.map((r) => r.body.retracted_event_id).sort()).toEqual(
        orphans.map((o) => o.id).sort(),
      );
      expect(retractions.map((r) => r.id).sort()).toEqual(
        orphans.map((o) => o.retracted_by).sort(),
      );
      for (const r of retractions) {
        expect(r.body).toMatchObject({
          slug: product.slug,
          chain_id: fx.anvil.chainId,
          retracted_event_type: 'deposit.confirmed',
          reason: 'reorg',
        });
      }
      // The submitted transaction is no longer confirmed by anything: it waits again.
      expect((await inbound.findById(submitted.event.id))?.linkedEventId).toBeNull();
      // Exactly once each, even after more rounds.
      await indexer.runOnce();
      await new Promise((r) => setTimeout(r, 300));
      expect(
        receiver.requests.filter((r) => JSON.parse(r.body.toString()).reason === 'reorg').length,
      ).toBe(orphans.length);
    } finally {
      await job.stop();
      await sender.close();
      await receiver.close();
    }
  }, 120_000);
});
