-- Webhooks (#15, #17): the per-destination "last failure" lookup of the statistics by a partial
-- index, and a destination disabled by hand beside the health job's automatic disabling.

-- Statistics read a destination's newest failed attempt. Through the (destination_id,
-- attempted_at) index that is a backwards scan past every success since the last failure: for a
-- healthy destination, all of its 90 days of attempts. Failures are few, so this index is small
-- and costs the dispatcher's insert of an attempt nothing when the attempt succeeds.
CREATE INDEX webhook_delivery_attempts_failures
  ON webhook_delivery_attempts (destination_id, attempted_at) WHERE NOT ok;

-- Who disabled a destination: 'health' (the job, after days of failures) or 'manual' (a partner in
-- the portal, or the operator's CLI). Set exactly when disabled_at is.
ALTER TABLE webhook_destinations ADD COLUMN disabled_by text
  CHECK (disabled_by IN ('health', 'manual'));
UPDATE webhook_destinations SET disabled_by = 'health' WHERE disabled_at IS NOT NULL;
ALTER TABLE webhook_destinations ADD CONSTRAINT webhook_destinations_disabled_by_set
  CHECK ((disabled_at IS NULL) = (disabled_by IS NULL));
