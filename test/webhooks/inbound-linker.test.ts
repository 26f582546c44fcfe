/**
 * The linker sweep: a submitted transaction whose lifecycle event was stored without the insert
 * trigger seeing it (on PostgreSQL, two transactions committing at the same moment) is linked by
 * the worker's periodic sweep. The race is reproduced by storing the event with the link trigger
 * switched off, which is what each transaction sees when the other has not committed yet.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEventsRepo } from '../../src/db/events.ts';
import { createPartnersRepo } from '../../src/db/partners.ts';
import { createInboundLinker } from '../../src/webhooks/inbound-linker.ts';
import { freshDatabase, storageEngines, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const TX = `0x${'ab'.repeat(32)}` as const;

describe.each(storageEngines())('inbound linker on %s', (engine) => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((t) => t.drop()));
  });

  it('links a submission whose event was stored unseen, and leaves other transactions alone', async () => {
    const t = await freshDatabase(engine);
    opened.push(t);
    const { db } = t;
    const partner = await createPartnersRepo(db).create('Acme');
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO products (id, partner_id, environment, slug, display_name, risk_label, chain_id, status,
         vault_kind, engine_name, engine_symbol, underlying_vault_address, asset_address, asset_symbol,
         asset_decimals, service_fee_bps, partner_fee_bps, service_fee_recipient, partner_fee_recipient)
       VALUES ('prd_1', $1, 'live', 'usdc', 'USDC', 'low', 31337, 'active', 'sync', 'E', 'E',
         '0x0000000000000000000000000000000000000001', '0x0000000000000000000000000000000000000002',
         'USDC', 6, 100, 100, '0x0000000000000000000000000000000000000003',
         '0x0000000000000000000000000000000000000004') RETURNING id`,
      [partner.id],
    );
    const productId = rows[0]!.id;
    const submit = (key: string, txHash: string) =>
      db.query(
        `INSERT INTO inbound_events (partner_id, environment, idempotency_key, event_type, body_sha256,
           body, occurred_at, product_id, chain_id, tx_hash)
         VALUES ($1, 'live', $2, 'deposit.submitted', '\\x00', '{}', now(), $3, 31337, $4)`,
        [partner.id, key, productId, txHash],
      );
    await submit('k1', TX);
    await submit('k2', `0x${'cd'.repeat(32)}`);
    await db.exec('ALTER TABLE events DISABLE TRIGGER events_link_inbound');
    const event = await createEventsRepo(db).insert({
      partnerId: partner.id,
      environment: 'live',
      productId,
      eventType: 'deposit.confirmed',
      dedupeKey: `deposit.confirmed:31337:${TX}:0`,
      payload: { tx_hash: TX },
      occurredAt: new Date(),
      chain: {
        chainId: 31337,
        blockNumber: 10n,
        blockHash: `0x${'11'.repeat(32)}`,
        txHash: TX,
        logIndex: 0,
      },
    });
    await db.exec('ALTER TABLE events ENABLE TRIGGER events_link_inbound');
    const linked = async () =>
      (
        await db.query<{ idempotency_key: string; linked_event_id: string | null }>(
          'SELECT idempotency_key, linked_event_id FROM inbound_events ORDER BY idempotency_key',
        )
      ).rows;
    expect((await linked()).map((r) => r.linked_event_id)).toEqual([null, null]);
    await createInboundLinker({ db, logger: captureLogger().logger }).tick();
    expect(await linked()).toEqual([
      { idempotency_key: 'k1', linked_event_id: event!.id },
      { idempotency_key: 'k2', linked_event_id: null },
    ]);
  });
});
