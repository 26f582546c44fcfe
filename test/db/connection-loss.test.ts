/**
 * A PostgreSQL connection dropped under the worker (a restart, a failover, a terminated backend)
 * fails the work in flight as a retryable error and never ends the process (issue #14 saw a worker
 * exit on "Unhandled 'error' event ... on Client instance"). The drop is real: the backend is
 * terminated with pg_terminate_backend from a second connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRetryable } from '../../src/worker/errors.ts';
import { createPeriodicJob } from '../../src/worker/runner.ts';
import { freshDatabase, postgresAdminUrl, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

describe.skipIf(!postgresAdminUrl())('a dropped PostgreSQL connection', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase('postgres');
  });
  afterAll(async () => {
    await t?.drop();
  });

  /** Terminates a backend and waits until PostgreSQL no longer lists it. */
  async function terminate(pid: number): Promise<void> {
    await t.db.query('SELECT pg_terminate_backend($1)', [pid]);
    for (;;) {
      const { rows } = await t.db.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
      if (rows.length === 0) return;
    }
  }

  it('fails a transaction whose connection drops while idle in it, retryably, and the pool recovers', async () => {
    const failure = await t.db
      .transaction(async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // The connection dies while this transaction waits on something else (an RPC call):
        // the client emits 'error' with no query in flight.
        await terminate(rows[0]!.pid);
        await tx.query('SELECT 1');
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(Error);
    expect(isRetryable(failure)).toBe(true);
    // The broken client was destroyed, not handed out again.
    for (let i = 0; i < 6; i++) {
      expect((await t.db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    }
  });

  it('a job whose tick loses its connection backs off and succeeds on the next tick', async () => {
    const logs = captureLogger();
    let ticks = 0;
    let succeeded!: () => void;
    const done = new Promise<void>((resolve) => {
      succeeded = resolve;
    });
    const job = createPeriodicJob({
      name: 'db-drop',
      intervalMs: 1,
      logger: logs.logger,
      tick: async () => {
        ticks++;
        await t.db.transaction(async (tx) => {
          const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          if (ticks === 1) await terminate(rows[0]!.pid);
          await tx.query('SELECT 1');
        });
        succeeded();
      },
    });
    job.start();
    await done;
    await job.stop();
    expect(ticks).toBe(2);
    const failed = logs.lines().filter((l) => l.includes('job tick failed'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain('"retryable":true');
  });
});
