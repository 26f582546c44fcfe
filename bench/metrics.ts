/**
 * Benchmark of the daily metrics backfill (issue 4: "Backfill 200 days of metrics for 10 products:
 * under 30 s"). Builds a 200-day local chain (demo seed, 16 engines), provisions 10 of its products,
 * and times one runOnce() from empty tables into PGlite, and into PostgreSQL when TEST_DATABASE_URL
 * (or DATABASE_URL) is set. Prints figures; it is not a pass/fail test.
 *
 *   npm run bench:metrics [-- --days 200 --products 10]
 */
import { parseArgs } from 'node:util';
import { createChainClient } from '../src/chain/client.ts';
import { createLogger } from '../src/logger.ts';
import { createMetricsProcessor } from '../src/sync/metrics.ts';
import { freshDatabase, storageEngines } from '../test/helpers/db.ts';
import { provisionEngines, startHistory } from '../test/sync/metrics-helpers.ts';

const { values } = parseArgs({
  options: {
    days: { type: 'string', default: '200' },
    products: { type: 'string', default: '10' },
  },
});
const days = Number(values.days);
const productCount = Number(values.products);

const t0 = performance.now();
const history = await startHistory('demo', days);
const buildSeconds = (performance.now() - t0) / 1000;
console.log(
  `chain: ${days} days, ${Object.keys(history.deployment.engines).length} engines, ` +
    `${history.deployment.timings.blocks} blocks, built in ${buildSeconds.toFixed(1)} s`,
);

try {
  for (const engine of storageEngines()) {
    const test = await freshDatabase(engine);
    try {
      const engines = Object.values(history.deployment.engines).slice(0, productCount);
      await provisionEngines(test.db, history.deployment, engines);
      const processor = createMetricsProcessor({
        db: test.db,
        logger: createLogger('warn'),
        chain: history.chain,
        client: createChainClient(history.chain, { timeoutMs: 60_000 }),
        now: () => new Date((history.deployment.historyEndTimestamp + 3600) * 1000),
      });
      const start = performance.now();
      const { written } = await processor.runOnce();
      const seconds = (performance.now() - start) / 1000;
      const rerunStart = performance.now();
      const again = await processor.runOnce();
      const rerunSeconds = (performance.now() - rerunStart) / 1000;
      console.log(
        `${engine.padEnd(8)} backfill ${engines.length} products: ${written} rows in ` +
          `${seconds.toFixed(2)} s (${Math.round(written / seconds)} rows/s); ` +
          `rerun ${again.written} rows in ${rerunSeconds.toFixed(2)} s`,
      );
    } finally {
      await test.drop();
    }
  }
} finally {
  await history.anvil.stop();
}
