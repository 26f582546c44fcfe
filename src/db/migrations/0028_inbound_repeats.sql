-- #17, the portal's inbound page: requests that repeated an earlier Idempotency-Key are counted on
-- the event they repeated, with the time of the latest. A duplicate (same body, event type and
-- environment) was absorbed: answered with the original event and `duplicate: true`, nothing
-- stored again. A conflict (another body, event type or environment under the key) was refused
-- with 409 idempotency_conflict. Neither stores a row of its own, so a flood of retries cannot
-- grow the table.
ALTER TABLE inbound_events
  ADD COLUMN duplicate_count integer NOT NULL DEFAULT 0,
  ADD COLUMN last_duplicate_at timestamptz,
  ADD COLUMN conflict_count integer NOT NULL DEFAULT 0,
  ADD COLUMN last_conflict_at timestamptz;

-- The portal lists an environment's newest events of a partner (the inbound page, 50 rows).
CREATE INDEX inbound_events_partner_env_newest ON inbound_events (partner_id, environment, id DESC);
-- The portal's lifecycle event page lists the inbound events that matched it.
CREATE INDEX inbound_events_linked ON inbound_events (linked_event_id)
  WHERE linked_event_id IS NOT NULL;
