-- Webhooks. Outbound: destinations per partner and environment, and one delivery row per stored
-- event and matching destination, created in the transaction that stores the event (so an event is
-- never committed without its deliveries). Inbound: per partner-environment secrets, and the events
-- partners push, unique per partner and Idempotency-Key.

-- Secrets are stored encrypted (AES-256-GCM under the master key, see src/webhooks/secret-box.ts):
-- signing needs the raw secret, so a hash would not do. Only the fingerprint is ever shown.
CREATE TABLE webhook_destinations (
  id                  text PRIMARY KEY,                         -- whk_…
  partner_id          text NOT NULL REFERENCES partners(id),
  environment         text NOT NULL CHECK (environment IN ('live', 'test')),
  url                 text NOT NULL,
  event_types         text[],                                   -- null: every event type
  secret_ciphertext   text NOT NULL,
  secret_fingerprint  text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  secret_rotated_at   timestamptz,
  -- Removed destinations keep their row, so their delivery log stays readable.
  removed_at          timestamptz
);
CREATE INDEX webhook_destinations_partner ON webhook_destinations (partner_id, environment)
  WHERE removed_at IS NULL;

CREATE TABLE webhook_deliveries (
  id                  text PRIMARY KEY DEFAULT ('dlv_' || replace(gen_random_uuid()::text, '-', '')),
  event_id            text NOT NULL REFERENCES events(id),
  destination_id      text NOT NULL REFERENCES webhook_destinations(id),
  status              text NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'delivered', 'failed')),
  -- Attempts started. An attempt is counted (committed) before its request is sent, so a worker
  -- that dies mid-attempt can never make it send twice nor exceed three.
  attempts            integer NOT NULL DEFAULT 0 CHECK (attempts BETWEEN 0 AND 3),
  -- While pending: when the next attempt is due, or, while one is in flight, when its lease ends
  -- (a crashed worker's attempt is then taken over as the next attempt).
  next_attempt_at     timestamptz NOT NULL DEFAULT now(),
  last_attempt_at     timestamptz,
  last_response_code  integer,
  last_response_body  text,                                     -- first 1 KiB of the last response
  last_error          text,                                     -- network failure or timeout
  replay_of           text REFERENCES webhook_deliveries(id),
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  delivered_at        timestamptz,
  failed_at           timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_destination ON webhook_deliveries (destination_id, created_at);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Fan-out inside the event's own insert statement: one set-based insert per statement (the
-- indexer stores thousands of events at once), nothing when no destination matches.
CREATE FUNCTION fan_out_event_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (event_id, destination_id)
  SELECT e.id, d.id
  FROM new_events e
  JOIN webhook_destinations d
    ON d.partner_id = e.partner_id AND d.environment = e.environment AND d.removed_at IS NULL
   AND (d.event_types IS NULL OR e.event_type = ANY (d.event_types))
  ORDER BY e.seq;
  RETURN NULL;
END
$$;
CREATE TRIGGER events_fan_out AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION fan_out_event_deliveries();

CREATE TABLE inbound_secrets (
  partner_id          text NOT NULL REFERENCES partners(id),
  environment         text NOT NULL CHECK (environment IN ('live', 'test')),
  secret_ciphertext   text NOT NULL,
  secret_fingerprint  text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  rotated_at          timestamptz,
  PRIMARY KEY (partner_id, environment)
);

-- Events partners push. `id` is the acknowledgement's integer event_id. Idempotency keys are scoped
-- to the partner (both environments) and kept with the event.
CREATE TABLE inbound_events (
  id                  bigserial PRIMARY KEY,
  partner_id          text NOT NULL REFERENCES partners(id),
  environment         text NOT NULL CHECK (environment IN ('live', 'test')),
  idempotency_key     text NOT NULL,
  event_type          text NOT NULL,
  body_sha256         bytea NOT NULL,                           -- of the exact bytes received
  body                text NOT NULL,
  occurred_at         timestamptz NOT NULL,
  -- deposit.submitted / redeem.submitted: the transaction to watch, and the lifecycle event its
  -- log produced once the indexer has seen it.
  product_id          text REFERENCES products(id),
  chain_id            bigint,
  tx_hash             text,                                     -- lowercase 0x…
  linked_event_id     text REFERENCES events(id),
  linked_at           timestamptz,
  received_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (partner_id, idempotency_key)
);
CREATE INDEX inbound_events_unlinked ON inbound_events (chain_id, tx_hash)
  WHERE tx_hash IS NOT NULL AND linked_event_id IS NULL;

-- Links submitted transactions to the lifecycle event of their log: the first such event of the
-- same product and transaction (a deposit's Deposit; a redeem's RedeemRequested or Withdraw).
CREATE FUNCTION link_inbound_events(only_ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE inbound_events i
  SET linked_event_id = m.event_id, linked_at = now()
  FROM (
    SELECT DISTINCT ON (s.id) s.id, e.id AS event_id
    FROM inbound_events s
    JOIN events e
      ON e.chain_id = s.chain_id AND e.tx_hash = s.tx_hash AND e.product_id = s.product_id
     AND e.event_type = ANY (
           CASE s.event_type
             WHEN 'deposit.submitted' THEN ARRAY['deposit.confirmed']
             ELSE ARRAY['redeem.requested', 'redeem.confirmed']
           END)
    WHERE s.tx_hash IS NOT NULL AND s.linked_event_id IS NULL
      AND (only_ids IS NULL OR s.id = ANY (only_ids))
    ORDER BY s.id, e.seq
  ) m
  WHERE i.id = m.id;
END
$$;

-- When the indexer stores a lifecycle event whose transaction a partner submitted, link it then.
CREATE FUNCTION link_inbound_on_event_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM new_events e
    JOIN inbound_events s ON s.chain_id = e.chain_id AND s.tx_hash = e.tx_hash
    WHERE s.linked_event_id IS NULL AND s.tx_hash IS NOT NULL
  ) THEN
    PERFORM link_inbound_events(NULL);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER events_link_inbound AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION link_inbound_on_event_insert();
