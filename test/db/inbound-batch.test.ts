/**
 * The inbound endpoint's group commit (#33 item 6): `storeMany` gives each event what `store`
 * gives it one by one — new, duplicate of an earlier request (in the same batch or before it), or
 * conflict — on both engines; and `coalesce` batches concurrent calls, answers each its own
 * result, and fails only the callers of a batch that failed.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { coalesce } from '../../src/db/coalesce.ts';
import { createInboundEventsRepo, type NewInboundEvent } from '../../src/db/inbound-events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';

const event = (partnerId: string, key: string, body: string, type = 'ping'): NewInboundEvent => ({
  partnerId,
  environment: 'live',
  idempotencyKey: key,
  eventType: type,
  bodySha256: createHash('sha256').update(body).digest(),
  body,
  occurredAt: new Date('2026-11-20T00:00:00Z'),
});

describe.each(storageEngines())('inbound events stored in batches on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });

  it('answers every event of a batch as store() answers it alone', async () => {
    const outcomes: Record<string, unknown>[][] = [];
    for (const mode of ['one by one', 'batch'] as const) {
      const t = await freshDatabase(engine);
      opened.push(t);
      const partner = await createPartnersRepo(t.db).create('Batch');
      const repo = createInboundEventsRepo(t.db);
      // Stored before the batch: one key sent again alike, one sent again with another body.
      await repo.store(event(partner.id, 'before-same', '{"a":1}'));
      await repo.store(event(partner.id, 'before-other', '{"a":1}'));
      const batch = [
        event(partner.id, 'k1', '{"n":1}'),
        event(partner.id, 'k2', '{"n":2}'),
        event(partner.id, 'k1', '{"n":1}'), // the same request again, in the same batch
        event(partner.id, 'k2', '{"n":3}'), // another body under a key of the batch
        event(partner.id, 'k3', '{"n":1}', 'deposit.submitted'),
        event(partner.id, 'k3', '{"n":1}'), // another event type under it
        event(partner.id, 'before-same', '{"a":1}'),
        event(partner.id, 'before-other', '{"a":2}'),
        event(partner.id, 'k4', '{"n":4}'),
      ];
      const results =
        mode === 'batch'
          ? await repo.storeMany(batch)
          : await (async () => {
              const out = [];
              for (const e of batch) out.push(await repo.store(e));
              return out;
            })();
      outcomes.push(
        results.map((r) => ({
          outcome: r.outcome,
          key: r.event.idempotencyKey,
          duplicates: r.event.duplicateCount,
          conflicts: r.event.conflictCount,
          type: r.event.eventType,
          environment: r.event.environment,
          body: r.event.body,
          sha: r.event.bodySha256.toString('hex'),
          occurredAt: r.event.occurredAt.toISOString(),
          tx: [r.event.productId, r.event.chainId, r.event.txHash, r.event.linkedEventId],
        })),
      );
      // Stored exactly once per key.
      const rows = await repo.list({ partnerId: partner.id });
      expect(rows.map((r) => r.idempotencyKey).sort()).toEqual(
        ['before-other', 'before-same', 'k1', 'k2', 'k3', 'k4'].sort(),
      );
    }
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(outcomes[0]!.map((o) => o.outcome)).toEqual([
      'stored',
      'stored',
      'duplicate',
      'conflict',
      'stored',
      'conflict',
      'duplicate',
      'conflict',
      'stored',
    ]);
  });
});

describe('coalesce', () => {
  it('writes concurrent calls in few batches and answers each its own result', async () => {
    const batches: number[][] = [];
    const write = coalesce(async (items: number[]) => {
      batches.push(items);
      await new Promise((r) => setTimeout(r, 5));
      return items.map((n) => n * 2);
    });
    const results = await Promise.all(Array.from({ length: 100 }, (_, n) => write(n)));
    expect(results).toEqual(Array.from({ length: 100 }, (_, n) => n * 2));
    expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, n) => n));
    // The first call is written alone at once; the rest wait for a batch slot together.
    expect(batches[0]).toEqual([0]);
    expect(batches.length).toBeLessThanOrEqual(3);
  });

  it('fails the callers of a failed batch only, and goes on', async () => {
    let call = 0;
    const write = coalesce(
      async (items: string[]) => {
        call++;
        await new Promise((r) => setTimeout(r, 5));
        if (call === 2) throw new Error('disk full');
        return items;
      },
      { maxInFlight: 1 },
    );
    const settled = await Promise.allSettled(['a', 'b', 'c'].map((s) => write(s)));
    // a alone in the first batch; b and c together in the second, which failed.
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    await expect(write('d')).resolves.toBe('d');
  });
});
