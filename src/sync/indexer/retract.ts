/**
 * Retracting chain events whose block left the canonical chain. After a reorganisation deeper than
 * the confirmation setting, the indexer rewinds to a block the chain still has (indexer.ts); every
 * stored event above it whose block hash the chain no longer has is retracted here, in the same
 * transaction as the rewind:
 *
 * - the event is marked retracted (kept: it may have been delivered, and the delivery log names it);
 *   retracted events leave the chain-log key free, so the same log mined again becomes a new event;
 * - a `chain_event.retracted` event names it (id, type, chain coordinates) for the partner, and goes
 *   out through the usual fan-out to every destination subscribed to it;
 * - a partner's submitted transaction (inbound webhook) linked to it is unlinked, waiting again.
 *
 * A delivered event cannot be unsent; the retraction lets a partner reconcile.
 */
import type { Hex } from 'viem';
import { getHeaders, MissingBlockError } from '../../chain/block-headers.ts';
import type { ChainClient } from '../../chain/client.ts';
import type { Queryable } from '../../db/client.ts';
import { createEventsRepo } from '../../db/events.ts';
import { isoSeconds } from './events.ts';

export interface OrphanedEvent {
  id: string;
  partnerId: string;
  environment: 'live' | 'test';
  productId: string;
  eventType: 'deposit.confirmed' | 'redeem.requested' | 'redeem.confirmed';
  slug: string;
  blockNumber: bigint;
  blockHash: Hex;
  txHash: Hex;
  logIndex: number;
}

interface Row {
  id: string;
  partner_id: string;
  environment: 'live' | 'test';
  product_id: string;
  event_type: OrphanedEvent['eventType'];
  slug: string;
  block_number: string;
  block_hash: Hex;
  tx_hash: Hex;
  log_index: number;
}

/** The canonical hash of each block (undefined where the chain has no such block any more). */
async function canonicalHashes(
  client: ChainClient,
  numbers: bigint[],
): Promise<Map<bigint, Hex | undefined>> {
  const out = new Map<bigint, Hex | undefined>();
  await Promise.all(
    numbers.map(async (n) => {
      try {
        out.set(n, (await getHeaders(client, [n])).get(n)?.hash);
      } catch (err) {
        if (!(err instanceof MissingBlockError)) throw err;
        out.set(n, undefined); // a shorter chain: the block is gone
      }
    }),
  );
  return out;
}

/** Stored, unretracted chain events of `chainId` above `above` whose block the chain no longer has. */
export async function findOrphanedEvents(
  db: Queryable,
  client: ChainClient,
  chainId: number,
  above: bigint,
): Promise<OrphanedEvent[]> {
  const { rows } = await db.query<Row>(
    `SELECT e.id, e.partner_id, e.environment, e.product_id, e.event_type, p.slug, e.block_number,
            e.block_hash, e.tx_hash, e.log_index
       FROM events e JOIN products p ON p.id = e.product_id
      WHERE e.chain_id = $1 AND e.block_number > $2 AND e.retracted_at IS NULL
        AND e.tx_hash IS NOT NULL
      ORDER BY e.block_number, e.log_index`,
    [chainId, above.toString()],
  );
  if (rows.length === 0) return [];
  const numbers = [...new Set(rows.map((r) => BigInt(r.block_number)))];
  const hashes = await canonicalHashes(client, numbers);
  return rows
    .filter((r) => hashes.get(BigInt(r.block_number)) !== r.block_hash)
    .map((r) => ({
      id: r.id,
      partnerId: r.partner_id,
      environment: r.environment,
      productId: r.product_id,
      eventType: r.event_type,
      slug: r.slug,
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash,
      txHash: r.tx_hash,
      logIndex: r.log_index,
    }));
}

/** Marks `orphans` retracted and stores one `chain_event.retracted` per orphan; returns how many. */
export async function retractEvents(
  tx: Queryable,
  chainId: number,
  orphans: readonly OrphanedEvent[],
  detectedAt: Date,
): Promise<number> {
  const events = createEventsRepo(tx);
  let retracted = 0;
  for (const o of orphans) {
    const notice = await events.insert({
      partnerId: o.partnerId,
      environment: o.environment,
      productId: o.productId,
      eventType: 'chain_event.retracted',
      dedupeKey: `chain_event.retracted:${o.id}`,
      payload: {
        slug: o.slug,
        chain_id: chainId,
        retracted_event_id: o.id,
        retracted_event_type: o.eventType,
        tx_hash: o.txHash,
        block_number: Number(o.blockNumber),
        block_hash: o.blockHash,
        log_index: o.logIndex,
        reason: 'reorg',
        detected_at: isoSeconds(Math.floor(detectedAt.getTime() / 1000)),
        // Every event carries occurred_at (DECISIONS gives this one the field too).
        occurred_at: isoSeconds(Math.floor(detectedAt.getTime() / 1000)),
      },
      occurredAt: detectedAt,
    });
    const { rowCount } = await tx.query(
      `UPDATE events SET retracted_at = $2, retracted_by = $3
        WHERE id = $1 AND retracted_at IS NULL`,
      [o.id, detectedAt, notice?.id ?? null],
    );
    retracted += rowCount ?? 0;
  }
  if (orphans.length > 0) {
    // A submitted transaction linked to a retracted event is waiting again (and links to the same
    // transaction's new event, if it was mined again, when that is stored).
    await tx.query(
      'UPDATE inbound_events SET linked_event_id = NULL, linked_at = NULL WHERE linked_event_id = ANY($1::text[])',
      [orphans.map((o) => o.id)],
    );
  }
  return retracted;
}
