/**
 * The log indexer through a provider that behaves like the real ones (test/helpers/provider-proxy.ts
 * in front of a real anvil): half of the requests answered by a node 30 blocks behind that quietly
 * leaves out the logs past its head, eth_getLogs spans capped with QuickNode's message, answers
 * capped at a result count with Infura's, 429s, 502/503s and latency. Thousands of engine logs are
 * mined while the indexer follows the head; at the end the stored events must be exactly the
 * chain's logs (none missing, none twice), and a real HTTPS receiver must have been sent each
 * deposit.confirmed exactly once.
 */
import { randomBytes } from 'node:crypto';
import { type Address, encodeFunctionData, type Hex, maxUint256, numberToHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseChainsFile } from '../../src/chain/chains.ts';
import { testUSDAbi, yieldEngineAbi } from '../../src/chain/generated/index.ts';
import { createCursorsRepo } from '../../src/db/cursors.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { TOPICS } from '../../src/sync/indexer/logs.ts';
import { createAddressPolicy, parseCidrList } from '../../src/webhooks/address-policy.ts';
import { createDispatcher } from '../../src/webhooks/dispatcher.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { createSender } from '../../src/webhooks/sender.ts';
import { type Fixture, OPERATOR, setupFixture, USD, USERS } from '../chain/helpers.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { captureLogger } from '../helpers/logs.ts';
import { waitFor } from '../helpers/process.ts';
import { type ProviderProxy, startProviderProxy } from '../helpers/provider-proxy.ts';
import { deployTestEngine, makeIndexer, registerProduct } from './helpers-indexer.ts';

const BLOCKS = 60;
const PER_BLOCK = 50;

let fx: Fixture;
let proxy: ProviderProxy;
let t: TestDatabase;
beforeAll(async () => {
  fx = await setupFixture();
  proxy = await startProviderProxy(fx.anvil.rpcUrl, { seed: 7 });
  t = await freshDatabase('pglite');
});
afterAll(async () => {
  await t?.drop();
  await proxy?.close();
  await fx?.stop();
});

/** Sends `calls` as one JSON-RPC batch of eth_sendTransaction with explicit nonces (automine off). */
async function sendBatch(
  calls: { from: Address; to: Address; data: Hex }[],
  nonces: Map<Address, number>,
): Promise<void> {
  const body = [];
  for (const [id, c] of calls.entries()) {
    let n = nonces.get(c.from);
    if (n === undefined) n = Number(await fx.rpc('eth_getTransactionCount', [c.from, 'pending']));
    nonces.set(c.from, n + 1);
    body.push({
      jsonrpc: '2.0',
      id,
      method: 'eth_sendTransaction',
      params: [{ ...c, gas: numberToHex(1_000_000), nonce: numberToHex(n) }],
    });
  }
  const res = await fetch(fx.anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = (await res.json()) as { error?: { message: string } }[];
  const failed = out.find((o) => o.error);
  if (failed) throw new Error(`eth_sendTransaction: ${failed.error?.message}`);
}

describe('log indexer through a provider with lagging nodes, caps, 429s and 5xx', () => {
  it('stores every engine log once and sends each deposit.confirmed exactly once', async () => {
    const { db } = t;
    const a = await deployTestEngine(fx, 'sync');
    const b = await deployTestEngine(fx, 'sync');
    const product = await registerProduct(fx, db, 'sync', a);
    await registerProduct(fx, db, 'sync', b);
    const engines = [a.engine, b.engine];

    // A webhook destination on the products' partner, a real HTTPS receiver, a running dispatcher.
    const box = createSecretBox(randomBytes(32));
    const partner = (await createPartnersRepo(db).findByName('Acme'))!;
    expect(partner.id).toBe(product.partnerId);
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
    const dispatcher = createDispatcher({
      db,
      logger: captureLogger().logger,
      sender,
      secretBox: box,
      retryDelaysMs: [50, 50],
      pollMs: 20,
    });
    const job = dispatcher.job();
    job.start();

    // The provider URL carries a key, as hosted providers' do: no log line may show it.
    const key = randomBytes(16).toString('hex');
    const [chain] = parseChainsFile(
      JSON.stringify([
        {
          chain_id: fx.anvil.chainId,
          name: 'provider',
          rpc_urls: [`${proxy.url}/v3/${key}`],
          confirmation_depth: 2,
          block_range_limit: 10_000,
        },
      ]),
    );
    const { logger, lines } = captureLogger('debug');
    const indexer = makeIndexer(fx, db, logger, { chain: chain! });
    proxy.set({
      lagBlocks: 30,
      lagShare: 0.5,
      maxLogSpan: 20,
      maxLogResults: 400,
      rateLimitShare: 0.04,
      serverErrorShare: 0.04,
      latencyMs: 1,
    });

    const nonces = new Map<Address, number>();
    await fx.rpc('evm_setAutomine', [false]);
    try {
      const setup: { from: Address; to: Address; data: Hex }[] = [];
      for (const user of USERS) {
        setup.push({
          from: OPERATOR,
          to: fx.asset,
          data: encodeFunctionData({
            abi: testUSDAbi,
            functionName: 'mint',
            args: [user, 1_000_000_000n * USD],
          }),
        });
        for (const engine of engines) {
          setup.push({
            from: user,
            to: fx.asset,
            data: encodeFunctionData({
              abi: testUSDAbi,
              functionName: 'approve',
              args: [engine, maxUint256],
            }),
          });
        }
      }
      await sendBatch(setup, nonces);
      await fx.rpc('evm_mine', []);

      let failedRounds = 0;
      const round = async () => {
        try {
          await indexer.runOnce();
        } catch {
          failedRounds++; // the job runner would back off and try again; so does this loop
        }
      };
      // Blocks of deposits, some empty blocks between them, the indexer following the head.
      for (let blk = 0; blk < BLOCKS; blk++) {
        const calls = [];
        for (let i = 0; i < PER_BLOCK; i++) {
          const user = USERS[(blk * PER_BLOCK + i) % USERS.length]!;
          calls.push({
            from: user,
            to: engines[i % 2]!,
            data: encodeFunctionData({
              abi: yieldEngineAbi,
              functionName: 'deposit',
              args: [BigInt(1 + ((blk + i) % 97)) * USD, user],
            }),
          });
        }
        await sendBatch(calls, nonces);
        await fx.rpc('evm_mine', []);
        if (blk % 3 === 0) await fx.rpc('anvil_mine', [numberToHex(2)]);
        // The first blocks are caught up in one go (wide ranges, refused over the cap); then the
        // indexer follows the head, where the lagging node's answers fall short.
        if (blk >= 20) await round();
      }
      await fx.rpc('anvil_mine', [numberToHex(3)]);
      const head = BigInt((await fx.rpc('eth_blockNumber', [])) as Hex);
      const cursors = createCursorsRepo(db);
      for (let i = 0; i < 200; i++) {
        const c = await cursors.get(fx.anvil.chainId);
        if (c && c.blockNumber >= head - 2n) break;
        await round();
      }
      expect((await cursors.get(fx.anvil.chainId))?.blockNumber).toBe(head - 2n);

      // The chain's own answer, straight from anvil: every Deposit of both engines.
      const truth = (await fx.rpc('eth_getLogs', [
        {
          address: engines,
          topics: [[TOPICS.deposit, TOPICS.withdraw, TOPICS.redeemRequested]],
          fromBlock: numberToHex(a.block),
          toBlock: numberToHex(head - 2n),
        },
      ])) as { transactionHash: Hex; logIndex: Hex }[];
      expect(truth.length).toBe(BLOCKS * PER_BLOCK);
      const stored = (
        await db.query<{ tx_hash: string; log_index: number; id: string }>(
          "SELECT tx_hash, log_index, id FROM events WHERE event_type = 'deposit.confirmed'",
        )
      ).rows;
      const key = (tx: string, i: number | bigint) => `${tx.toLowerCase()}:${BigInt(i)}`;
      const storedKeys = stored.map((r) => key(r.tx_hash, r.log_index));
      const truthKeys = new Set(truth.map((l) => key(l.transactionHash, BigInt(l.logIndex))));
      const missing = [...truthKeys].filter((k) => !storedKeys.includes(k));
      const duplicated = storedKeys.length - new Set(storedKeys).size;
      const extra = storedKeys.filter((k) => !truthKeys.has(k));
      expect({ missing: missing.length, duplicated, extra: extra.length }).toEqual({
        missing: 0,
        duplicated: 0,
        extra: 0,
      });

      // The imitation really did what the test is about: the lagging node left logs out, caps
      // and refusals were sent; the indexer noticed the gaps and filled them by block hash.
      expect(proxy.stats.logsWithheld).toBeGreaterThan(0);
      expect(proxy.stats.spanRefusals).toBeGreaterThan(0);
      expect(proxy.stats.rateLimited).toBeGreaterThan(0);
      expect(proxy.stats.serverErrors).toBeGreaterThan(0);
      expect(lines().some((l) => l.includes('found by block hash'))).toBe(true);
      expect(lines().join('\n')).not.toContain(key);

      // Each deposit.confirmed reached the receiver exactly once.
      const ids = new Set(stored.map((r) => r.id));
      await waitFor(
        async () =>
          new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size >= ids.size
            ? true
            : undefined,
        60_000,
        'every deposit.confirmed delivered',
      );
      const received = receiver.requests.map((r) => String(r.headers['webhook-id']));
      const counts = new Map<string, number>();
      for (const id of received) counts.set(id, (counts.get(id) ?? 0) + 1);
      expect([...ids].filter((id) => counts.get(id) !== 1)).toEqual([]);
      expect(received.length).toBe(ids.size);
      console.log(
        `providers: ${truth.length} logs, ${stored.length} events, 0 missing, 0 duplicated; ` +
          `${received.length} deliveries; lagging answers ${proxy.stats.laggingAnswers}, logs withheld ` +
          `${proxy.stats.logsWithheld}, span refusals ${proxy.stats.spanRefusals}, result refusals ` +
          `${proxy.stats.resultRefusals}, 429 ${proxy.stats.rateLimited}, 5xx ${proxy.stats.serverErrors}, ` +
          `failed rounds ${failedRounds}`,
      );
    } finally {
      await fx.rpc('evm_setAutomine', [true]);
      await job.stop();
      await sender.close();
      await receiver.close();
    }
  }, 240_000);
});
