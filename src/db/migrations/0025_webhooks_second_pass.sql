-- Outbound webhooks, second pass (#15): test pings to one destination, secret rotation with an
-- overlap, endpoint health (auto-disable, statistics) and retention of the attempt log.

-- Rotation with overlap: after a rotation the previous secret keeps signing (a second
-- `webhook-signature` entry) until previous_secret_expires_at. Same AES-GCM context as the current
-- secret (the destination id), so the ciphertext moves between columns unchanged.
ALTER TABLE webhook_destinations
  ADD COLUMN previous_secret_ciphertext  text,
  ADD COLUMN previous_secret_fingerprint text,
  ADD COLUMN previous_secret_expires_at  timestamptz,
  -- Endpoint health. failing_since: the first failed attempt since the last successful one (null
  -- while the last outcome was a success); the health job disables a destination once it is older
  -- than the threshold. disabled_reason is shown to the partner.
  ADD COLUMN failing_since               timestamptz,
  ADD COLUMN disabled_at                 timestamptz,
  ADD COLUMN disabled_reason             text;

-- Every attempt, for statistics (success rate, latency, last success/failure) and the partner's
-- delivery log. Kept 90 days by default (the retention job prunes it in batches).
CREATE TABLE webhook_delivery_attempts (
  delivery_id     text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  attempt         integer NOT NULL,
  destination_id  text NOT NULL,
  attempted_at    timestamptz NOT NULL DEFAULT now(),
  ok              boolean NOT NULL,
  status_code     integer,
  duration_ms     integer NOT NULL,
  response_body   text,                                     -- first 1 KiB
  error           text,
  PRIMARY KEY (delivery_id, attempt)
);
CREATE INDEX webhook_delivery_attempts_destination
  ON webhook_delivery_attempts (destination_id, attempted_at);
CREATE INDEX webhook_delivery_attempts_at ON webhook_delivery_attempts (attempted_at);

-- Retention deletes finished deliveries; a replay keeps its row when the one it repeats goes.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_replay_of_fkey;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_replay_of_fkey
  FOREIGN KEY (replay_of) REFERENCES webhook_deliveries(id) ON DELETE SET NULL;
CREATE INDEX webhook_deliveries_replay_of ON webhook_deliveries (replay_of)
  WHERE replay_of IS NOT NULL;
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (updated_at)
  WHERE status <> 'pending';
CREATE INDEX inbound_events_received ON inbound_events (received_at);

-- Fan-out: `ping` (a test event) goes only to the destination it was made for, never fanned out;
-- a disabled destination still gets a row, failed at once, so the bulk replay after re-enabling
-- it sends what happened meanwhile.
CREATE OR REPLACE FUNCTION fan_out_event_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (event_id, destination_id, status, failed_at, last_error)
  SELECT e.id, d.id,
         CASE WHEN d.disabled_at IS NULL THEN 'pending' ELSE 'failed' END,
         CASE WHEN d.disabled_at IS NULL THEN NULL ELSE now() END,
         CASE WHEN d.disabled_at IS NULL THEN NULL ELSE 'destination disabled' END
  FROM new_events e
  JOIN webhook_destinations d
    ON d.partner_id = e.partner_id AND d.environment = e.environment AND d.removed_at IS NULL
   AND (d.event_types IS NULL OR e.event_type = ANY (d.event_types))
  WHERE e.event_type <> 'ping'
  ORDER BY e.seq;
  RETURN NULL;
END
$$;
