-- Reorg repair (docs/operations.md, "Reorganisations deeper than the confirmation"). A chain event
-- whose block left the canonical chain is retracted, not deleted: it may have been delivered, and a
-- `chain_event.retracted` event names it for the partner. The same log mined again (same transaction
-- and log index in another block) is then a new event, so the chain-log key is unique only among
-- events still standing.
ALTER TABLE events ADD COLUMN retracted_at timestamptz;
ALTER TABLE events ADD COLUMN retracted_by text;
DROP INDEX events_chain_log;
CREATE UNIQUE INDEX events_chain_log ON events (chain_id, tx_hash, log_index, event_type)
  WHERE retracted_at IS NULL;
CREATE INDEX events_chain_block ON events (chain_id, block_number)
  WHERE block_number IS NOT NULL AND retracted_at IS NULL;

-- The hash of a daily row's boundary block: a row whose block left the canonical chain is removed
-- and computed again from the chain as it now is. Rows written before this column are not checked.
ALTER TABLE daily_snapshots ADD COLUMN block_hash text;
