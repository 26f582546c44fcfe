-- Exits followed to the end (issue #34): every confirmed redeem request of an asynchronous engine,
-- from its `redeem.requested` event until it is claimed. The exit follower (src/sync/exits.ts)
-- adds a row per request and moves it pending → claimable (sending `redeem.claimable` once, in the
-- same transaction) → claimed; the position endpoint lists a wallet's open requests from here and
-- reads their state live from the chain.
CREATE TABLE redeem_requests (
  product_id              text NOT NULL REFERENCES products(id),
  request_id              numeric(78, 0) NOT NULL,
  controller              text NOT NULL,             -- EIP-55: who may claim
  owner_address           text NOT NULL,             -- EIP-55: whose shares were escrowed
  shares                  numeric(78, 0) NOT NULL,   -- engine shares, base units
  requested_event_id      text NOT NULL UNIQUE REFERENCES events(id),
  requested_at            timestamptz NOT NULL,      -- block time of the request
  estimated_claimable_at  timestamptz,               -- the engine's claimableAt at the request; null when 0
  state                   text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'claimable', 'claimed')),
  claimable_at            timestamptz,               -- when it was found claimable (or the schedule's time)
  claimable_event_id      text REFERENCES events(id),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (product_id, request_id)
);
CREATE INDEX redeem_requests_open ON redeem_requests (product_id) WHERE state <> 'claimed';
CREATE INDEX redeem_requests_controller ON redeem_requests (product_id, controller) WHERE state <> 'claimed';
-- The follower looks for redeem.requested events without a row every round: a partial index keeps
-- that off the rest of the events table.
CREATE INDEX events_redeem_requested ON events (chain_id, seq) WHERE event_type = 'redeem.requested';
