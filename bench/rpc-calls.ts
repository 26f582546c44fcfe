/**
 * `npm run bench:rpc-calls`: what following products costs in provider calls. For 5, 20 and 50
 * active products on one chain it runs the lifecycle's tick (the head, the confirmed block, and each
 * product's status, fees and upstream reads) through a counting JSON-RPC proxy in front of anvil,
 * twice in the same run: reads one call each (the calls the lifecycle made before Multicall3: 1 + 6
 * per product, then sent one product after the other) and gathered into Multicall3 calls. It prints calls per
 * tick, per product per day at the default 2 s poll, and the tick's time against the poll interval.
 * Calls are counted as providers bill them: each element of a JSON-RPC batch counts.
 *
 * It also prints what the chain-wide jobs cost per tick when nothing happens (the indexer's head
 * read, the daily metrics' idle check), which do not grow with products. Prints figures; asserts
 * nothing.
 */
import { createChainClient } from '../src/chain/client.ts';
import { installMulticall3, MULTICALL3_ADDRESS } from '../src/chain/multicall3.ts';
import { createLogger } from '../src/logger.ts';
import { createIndexer } from '../src/sync/indexer.ts';
import { createLifecycle } from '../src/sync/lifecycle.ts';
import { createMetricsProcessor } from '../src/sync/metrics.ts';
import { mineBlock, setupFixture } from '../test/chain/helpers.ts';
import { freshDatabase } from '../test/helpers/db.ts';
import { startProviderProxy } from '../test/helpers/provider-proxy.ts';
import { chainSettings, deployTestEngine, registerProduct } from '../test/sync/helpers-indexer.ts';

const COUNTS = [5, 20, 50];
const TICKS = 10;
const POLL_MS = 2_000;
const TICKS_PER_DAY = (86_400 * 1000) / POLL_MS;

const fx = await setupFixture();
const proxy = await startProviderProxy(fx.anvil.rpcUrl);
const t = await freshDatabase('pglite');
const logger = createLogger('warn');
try {
  const multicallFrom = await installMulticall3(fx.rpc);
  await mineBlock(fx);
  const chain = { ...chainSettings(fx, [proxy.url]), name: 'bench' };
  const plain = createChainClient(chain);
  const gathered = createChainClient(chain, {
    multicall3: { address: MULTICALL3_ADDRESS, blockCreated: multicallFrom },
  });

  const rows: string[] = [];
  let registered = 0;
  for (const n of COUNTS) {
    while (registered < n) {
      const deployed = await deployTestEngine(fx, 'sync');
      await registerProduct(fx, t.db, 'sync', deployed);
      registered++;
    }
    await mineBlock(fx);
    await mineBlock(fx);
    await mineBlock(fx);
    const figures: Record<string, { calls: number; ms: number }> = {};
    for (const [mode, client] of [
      ['one call each', plain],
      ['Multicall3', gathered],
    ] as const) {
      const lifecycle = createLifecycle({
        db: t.db,
        logger,
        chain,
        client,
        holder: `bench-${mode}`,
      });
      await lifecycle.tick(); // warm: the lease, the first reads
      proxy.resetCounts();
      const times: number[] = [];
      for (let i = 0; i < TICKS; i++) {
        const s = performance.now();
        const result = await lifecycle.tick();
        times.push(performance.now() - s);
        if (!result.leased) throw new Error('lifecycle lease not held');
        if (result.moved.length > 0) throw new Error(`unexpected moves: ${result.moved}`);
      }
      times.sort((a, b) => a - b);
      figures[mode] = { calls: proxy.totalCalls() / TICKS, ms: times[Math.floor(TICKS / 2)]! };
      // Hand the lease back for the next mode.
      await t.db.query("DELETE FROM leases WHERE name LIKE 'lifecycle:%'");
    }
    const before = figures['one call each']!;
    const after = figures.Multicall3!;
    rows.push(
      `| ${n} | ${before.calls.toFixed(0)} | ${after.calls.toFixed(0)} | ${(before.calls / after.calls).toFixed(1)}× | ` +
        `${Math.round((before.calls * TICKS_PER_DAY) / n).toLocaleString('en-US')} | ` +
        `${Math.round((after.calls * TICKS_PER_DAY) / n).toLocaleString('en-US')} | ` +
        `${before.ms.toFixed(1)} | ${after.ms.toFixed(1)} |`,
    );
  }

  // Chain-wide jobs at rest: the indexer's round and the metrics' check when nothing is new.
  const indexer = createIndexer({ db: t.db, logger, chain, client: gathered, holder: 'bench' });
  for (let i = 0; i < 5; i++) await indexer.runOnce(); // catch up
  proxy.resetCounts();
  for (let i = 0; i < TICKS; i++) await indexer.runOnce();
  const indexerIdle = proxy.totalCalls() / TICKS;
  const metrics = createMetricsProcessor({ db: t.db, logger, chain, client: gathered });
  await metrics.runOnce();
  proxy.resetCounts();
  for (let i = 0; i < TICKS; i++) await metrics.runOnce();
  const metricsIdle = proxy.totalCalls() / TICKS;

  console.log(
    `RPC calls of the lifecycle tick (${TICKS} ticks each; poll ${POLL_MS} ms; Node ${process.version})`,
  );
  console.log('');
  console.log(
    '| products | calls/tick, one each (before) | calls/tick, Multicall3 | fewer | calls/product/day before | calls/product/day now | tick ms before | tick ms now |',
  );
  console.log('|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of rows) console.log(r);
  console.log('');
  console.log(
    `Chain-wide, at rest, whatever the number of products: indexer ${indexerIdle.toFixed(1)} calls/round ` +
      `(${Math.round(indexerIdle * TICKS_PER_DAY).toLocaleString('en-US')}/day), daily metrics ` +
      `${metricsIdle.toFixed(1)} calls/run (every 60 s: ${Math.round(metricsIdle * 1440).toLocaleString('en-US')}/day). ` +
      'The indexer also reads one header per new block (its completeness check; e.g. Base: 43,200/day).',
  );
} finally {
  await t.drop();
  await proxy.close();
  await fx.stop();
}
