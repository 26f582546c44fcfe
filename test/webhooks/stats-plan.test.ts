/**
 * The statistics' lookups use the indexes meant for them (migration 0027), on every engine: the
 * newest failed attempt comes from the partial index of failures, a backwards scan that stops at
 * the first row, instead of walking back past every success of a healthy destination. The plan is
 * read with sequential scans discouraged, so that the small test table does not make the planner
 * prefer one: what is checked is that the query can use the index (its predicate matches).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookHealthRepo } from '../../src/db/webhook-health.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

describe.each(storageEngines())('webhook statistics plans on %s', (engine) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase(engine);
    await t.db.query(`INSERT INTO partners (id, name) VALUES ('ptn_plan', 'Plan')`);
    await t.db.query(
      `INSERT INTO webhook_destinations
         (id, partner_id, environment, url, secret_ciphertext, secret_fingerprint)
       VALUES ('whk_plan', 'ptn_plan', 'live', 'https://h.example.com', 'x', 'f')`,
    );
    // Attempts without their deliveries (foreign keys off for this transaction only): 2,000
    // over 10 days, one in a hundred failed.
    await t.db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await tx.query(
        `INSERT INTO webhook_delivery_attempts
           (delivery_id, attempt, destination_id, attempted_at, ok, status_code, duration_ms)
         SELECT 'dlv_' || n, 1, 'whk_plan', now() - interval '10 days' + n * interval '432 seconds',
                n % 100 <> 0, CASE WHEN n % 100 = 0 THEN 500 ELSE 200 END, 20 + n % 50
         FROM generate_series(1, 2000) n`,
      );
    });
    await t.db.query('ANALYZE webhook_delivery_attempts');
  });
  afterAll(async () => t?.drop());

  it('reads the last failure through the partial index of failed attempts', async () => {
    const plans: string[] = [];
    await t.db.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      await tx.query('SET LOCAL enable_bitmapscan = off');
      const explaining = {
        async query(sql: string, params?: unknown[]) {
          const r = await tx.query<Record<string, string>>(`EXPLAIN (COSTS OFF) ${sql}`, params);
          plans.push(r.rows.map((x) => Object.values(x)[0]).join('\n'));
          return { rows: [], rowCount: 0 };
        },
      };
      await createWebhookHealthRepo(explaining as never).stats(['whk_plan']);
    });
    const plan = plans[0]!;
    expect(plan).toMatch(/Index Scan Backward using webhook_delivery_attempts_failures/);
    // And the figures themselves, from the same rows.
    const [stats] = await createWebhookHealthRepo(t.db).stats(['whk_plan']);
    expect(stats!.lastFailure).toMatchObject({ statusCode: 500 });
    expect(stats!.lastFailure!.at.getTime()).toBe(
      (
        await t.db.query<{ at: Date }>(
          'SELECT max(attempted_at) AS at FROM webhook_delivery_attempts WHERE NOT ok',
        )
      ).rows[0]!.at.getTime(),
    );
  });
});
