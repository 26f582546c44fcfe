/**
 * Repository of followed redeem requests (migration 0050): one row per confirmed request of an
 * asynchronous engine, from its `redeem.requested` event to its claim. Written by the exit follower
 * (src/sync/exits.ts); read by the position endpoint (a wallet's open requests).
 */
import type { Queryable } from './client.ts';

export type RedeemRequestState = 'pending' | 'claimable' | 'claimed';

export interface FollowedRequest {
  productId: string;
  requestId: bigint;
  controller: `0x${string}`;
  owner: `0x${string}`;
  shares: bigint;
  requestedEventId: string;
  requestedAt: Date;
  estimatedClaimableAt: Date | null;
  state: RedeemRequestState;
  claimableAt: Date | null;
  claimableEventId: string | null;
}

interface Row {
  product_id: string;
  request_id: string;
  controller: `0x${string}`;
  owner_address: `0x${string}`;
  shares: string;
  requested_event_id: string;
  requested_at: Date;
  estimated_claimable_at: Date | null;
  state: RedeemRequestState;
  claimable_at: Date | null;
  claimable_event_id: string | null;
}

const toRequest = (r: Row): FollowedRequest => ({
  productId: r.product_id,
  requestId: BigInt(r.request_id),
  controller: r.controller,
  owner: r.owner_address,
  shares: BigInt(r.shares),
  requestedEventId: r.requested_event_id,
  requestedAt: new Date(r.requested_at),
  estimatedClaimableAt: r.estimated_claimable_at && new Date(r.estimated_claimable_at),
  state: r.state,
  claimableAt: r.claimable_at && new Date(r.claimable_at),
  claimableEventId: r.claimable_event_id,
});

/** A `redeem.requested` event not followed yet. */
export interface UnfollowedRequestEvent {
  eventId: string;
  productId: string;
  payload: string;
  occurredAt: Date;
}

export function createRedeemRequestsRepo(db: Queryable) {
  return {
    /** Unretracted `redeem.requested` events of the chain that have no row yet, oldest first. */
    async unfollowed(chainId: number, limit = 500): Promise<UnfollowedRequestEvent[]> {
      const { rows } = await db.query<{
        id: string;
        product_id: string;
        payload: string;
        occurred_at: Date;
      }>(
        `SELECT e.id, e.product_id, e.payload, e.occurred_at FROM events e
          WHERE e.event_type = 'redeem.requested' AND e.chain_id = $1 AND e.retracted_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM redeem_requests r WHERE r.requested_event_id = e.id)
          ORDER BY e.seq LIMIT $2`,
        [chainId, limit],
      );
      return rows.map((r) => ({
        eventId: r.id,
        productId: r.product_id,
        payload: r.payload,
        occurredAt: new Date(r.occurred_at),
      }));
    },

    async add(
      r: Omit<FollowedRequest, 'state' | 'claimableAt' | 'claimableEventId'>,
    ): Promise<void> {
      await db.query(
        `INSERT INTO redeem_requests (product_id, request_id, controller, owner_address, shares,
           requested_event_id, requested_at, estimated_claimable_at)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT DO NOTHING`,
        [
          r.productId,
          r.requestId.toString(),
          r.controller,
          r.owner,
          r.shares.toString(),
          r.requestedEventId,
          r.requestedAt,
          r.estimatedClaimableAt,
        ],
      );
    },

    /** Requests not claimed yet of the given products. */
    async open(productIds: readonly string[]): Promise<FollowedRequest[]> {
      if (productIds.length === 0) return [];
      const { rows } = await db.query<Row>(
        `SELECT * FROM redeem_requests WHERE product_id = ANY($1::text[]) AND state <> 'claimed'
          ORDER BY product_id, request_id`,
        [productIds],
      );
      return rows.map(toRequest);
    },

    /** A wallet's requests not claimed yet (as the service last saw them) in one product. */
    async openFor(productId: string, controller: string): Promise<FollowedRequest[]> {
      const { rows } = await db.query<Row>(
        `SELECT * FROM redeem_requests
          WHERE product_id = $1 AND lower(controller) = lower($2) AND state <> 'claimed'
          ORDER BY request_id`,
        [productId, controller],
      );
      return rows.map(toRequest);
    },

    async markClaimable(
      productId: string,
      requestId: bigint,
      at: Date,
      eventId: string | null,
    ): Promise<void> {
      await db.query(
        `UPDATE redeem_requests SET state = 'claimable', claimable_at = $3,
           claimable_event_id = coalesce($4, claimable_event_id), updated_at = now()
          WHERE product_id = $1 AND request_id = $2 AND state = 'pending'`,
        [productId, requestId.toString(), at, eventId],
      );
    },

    async markClaimed(productId: string, requestId: bigint): Promise<void> {
      await db.query(
        `UPDATE redeem_requests SET state = 'claimed', updated_at = now()
          WHERE product_id = $1 AND request_id = $2`,
        [productId, requestId.toString()],
      );
    },
  };
}

export type RedeemRequestsRepo = ReturnType<typeof createRedeemRequestsRepo>;
