/**
 * The documented topology (docs/maintainers/operations.md), run for real: `yield-service migrate` first, then
 * two API processes and two worker processes (the CLI, production settings) on one PostgreSQL and
 * one Redis, sharing MASTER_KEY. Both APIs answer from the one database; the per-key budget is
 * shared through Redis; the two workers split the chain and the delivery queue, so every event is
 * stored once and delivered once, signed with the secret the master key opens. Each process's
 * /metrics (its own port) reports its part; their memory is printed for the sizing figures.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Address } from 'viem';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiKeysRepo } from '../../src/db/api-keys.ts';
import { createDatabase } from '../../src/db/client.ts';
import { createWebhookDestinationsRepo } from '../../src/db/webhook-destinations.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { engineWrite, type Fixture, setupFixture, USD, USERS } from '../chain/helpers.ts';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { type HttpsReceiver, startHttpsReceiver, testCaPem } from '../helpers/https-receiver.ts';
import { type Spawned, spawnCli, waitFor } from '../helpers/process.ts';
import { sampleSum, scrape } from '../helpers/prometheus.ts';
import { testRedisUrl } from '../helpers/redis.ts';
import { deployTestEngine, mine, registerProduct } from '../sync/helpers-indexer.ts';

const [ALICE] = USERS as [Address];
const DEPOSITS = 12;

describe.runIf(postgresAdminUrl() && testRedisUrl())(
  'two APIs and two workers on one PostgreSQL and one Redis',
  () => {
    let fx: Fixture | undefined;
    let t: TestDatabase | undefined;
    let receiver: HttpsReceiver | undefined;
    let dir: string | undefined;
    const processes: Spawned[] = [];
    afterAll(async () => {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await Promise.all(processes.map((p) => p.exited));
      await receiver?.close();
      await t?.drop();
      await fx?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('serves, shares budgets, and stores and delivers each event once', async () => {
      fx = await setupFixture();
      t = await freshDatabase('postgres', { migrated: false });
      await t.db.close();
      dir = mkdtempSync(path.join(tmpdir(), 'pys-topology-'));
      const caFile = path.join(dir, 'ca.pem');
      writeFileSync(caFile, testCaPem());
      const chainsFile = path.join(dir, 'chains.json');
      writeFileSync(
        chainsFile,
        JSON.stringify([
          {
            chain_id: fx.anvil.chainId,
            name: 'topology',
            rpc_urls: [fx.anvil.rpcUrl],
            confirmation_depth: 2,
            block_range_limit: 10_000,
          },
        ]),
      );
      const masterKey = randomBytes(32);
      const shared = {
        DATABASE_URL: t.location,
        REDIS_URL: testRedisUrl()!,
        MASTER_KEY: masterKey.toString('hex'),
        CHAINS_FILE: chainsFile,
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
        WEBHOOK_CA_FILE: caFile,
        METRICS_PORT: '0',
        LOG_LEVEL: 'warn',
      };

      // 1. Migrations first, by one command, before any process of the new version starts.
      const migrate = spawnCli(['migrate'], { ...shared, DATA_DIR: dir });
      expect((await migrate.exited).code).toBe(0);
      expect(migrate.stdout()).toMatch(/^Applied \d+ migration/);

      const db = await createDatabase({ engine: 'postgres', url: t.location, poolMax: 2 });
      try {
        const { engine, block } = await deployTestEngine(fx, 'sync');
        const product = await registerProduct(fx, db, 'sync', { engine, block });
        const testKey = (await createApiKeysRepo(db).create(product.partnerId, 'test')).key;
        const liveKey = (await createApiKeysRepo(db).create(product.partnerId, 'live')).key;
        receiver = await startHttpsReceiver();
        const { secret } = await createWebhookDestinationsRepo(db, createSecretBox(masterKey)).add({
          partnerId: product.partnerId,
          environment: 'live',
          url: receiver.url,
        });

        // 2. The roles: two of each, every process its own DATA_DIR (nothing shared on disk).
        const start = (role: 'api' | 'worker', n: number) => {
          const dataDir = path.join(dir!, `${role}-${n}`);
          const p = spawnCli(['start'], { ...shared, ROLES: role, PORT: '0', DATA_DIR: dataDir });
          processes.push(p);
          return p;
        };
        const apis = [start('api', 1), start('api', 2)];
        const workers = [start('worker', 1), start('worker', 2)];
        const urls = await Promise.all(
          apis.map((p) =>
            waitFor(() => /listening on (http:\/\/\S+)/.exec(p.stdout())?.[1], 90_000, 'an API'),
          ),
        );
        const metricsUrls = await Promise.all(
          [...apis, ...workers].map((p) =>
            waitFor(() => /Metrics on (http:\/\/\S+)/.exec(p.stdout())?.[1], 90_000, 'metrics'),
          ),
        );
        expect(new Set(urls).size).toBe(2);

        // Both APIs answer from the one database.
        const lists = await Promise.all(
          urls.map(async (u) => {
            const res = await fetch(`${u}/api/partner/products`, {
              headers: { 'x-api-key': liveKey },
            });
            expect(res.status).toBe(200);
            return ((await res.json()) as { data: Array<{ slug: string }> }).data.map(
              (p) => p.slug,
            );
          }),
        );
        expect(lists[0]).toEqual([product.slug]);
        expect(lists[1]).toEqual(lists[0]);

        // One budget across the APIs (Redis): the test environment's 100 a minute, alternating.
        const statuses: number[] = [];
        for (let i = 0; i < 101; i++) {
          const res = await fetch(`${urls[i % 2]}/api/partner/products`, {
            headers: { 'x-api-key': testKey },
          });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
        expect(statuses.filter((s) => s === 200)).toHaveLength(100);
        expect(statuses[100]).toBe(429);

        // 3. Chain activity: the two workers index it once and deliver each event once.
        const hashes: string[] = [];
        for (let i = 0; i < DEPOSITS; i++) {
          const { receipt } = await engineWrite(fx, engine, ALICE, {
            fn: 'deposit',
            args: [USD, ALICE],
          });
          hashes.push(receipt.transactionHash);
        }
        await mine(fx, 3);
        await waitFor(
          () => (receiver!.requests.length >= DEPOSITS ? true : undefined),
          60_000,
          'every deposit delivered',
        );
        await new Promise((r) => setTimeout(r, 1_000)); // a duplicate would arrive by now
        const stored = (
          await db.query<{ tx_hash: string }>(
            `SELECT tx_hash FROM events WHERE event_type = 'deposit.confirmed' ORDER BY block_number, log_index`,
          )
        ).rows.map((r) => r.tx_hash);
        expect(stored).toEqual(hashes);
        expect(receiver.requests).toHaveLength(DEPOSITS);
        const ids = receiver.requests.map((r) => String(r.headers['x-service-event-id']));
        expect(new Set(ids).size).toBe(DEPOSITS);
        // Signed with the destination's secret, which the workers opened with the shared MASTER_KEY.
        for (const r of receiver.requests) {
          const expected = createHmac('sha256', secret).update(r.body).digest('hex');
          expect(r.headers['x-service-signature']).toBe(expected);
        }

        // 4. Each process reports its part; the workers' delivery counts add up.
        const scrapes = await Promise.all(metricsUrls.map((u) => scrape(u)));
        const delivered = scrapes
          .slice(2)
          .map(
            (s) => sampleSum(s, 'webhook_delivery_attempts_total', { outcome: 'delivered' }) ?? 0,
          );
        expect(delivered.reduce((a, b) => a + b, 0)).toBe(DEPOSITS);
        const apiRequests = scrapes
          .slice(0, 2)
          .map((s) => sampleSum(s, 'http_requests_total', { route: '/api/partner/products' }) ?? 0);
        expect(apiRequests.reduce((a, b) => a + b, 0)).toBe(103);
        expect(sampleSum(scrapes[2]!, 'webhook_deliveries_pending')).toBe(0);
        const rss = scrapes.map((s) =>
          Math.round((sampleSum(s, 'process_resident_memory_bytes') ?? 0) / 1_048_576),
        );
        console.log(
          `[topology] 2 api + 2 worker: RSS MiB api=${rss.slice(0, 2).join(',')} worker=${rss.slice(2).join(',')}; deliveries by worker=${delivered.join(',')}; api requests by process=${apiRequests.join(',')}`,
        );

        // 5. A rolling restart: each process stops on SIGTERM, within its timeout.
        for (const p of processes) p.child.kill('SIGTERM');
        const exits = await Promise.all(processes.map((p) => p.exited));
        expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0]);
      } finally {
        await db.close();
      }
    }, 240_000);
  },
);
