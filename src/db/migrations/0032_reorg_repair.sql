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

-- A partner's submitted transaction (inbound_events) links to the chain event that confirmed it;
-- a retracted event confirms nothing: its links are undone (src/sync/indexer/retract.ts), and only
-- events still standing are linked, so the same transaction mined again links to its new event.
CREATE OR REPLACE FUNCTION link_inbound_events(only_ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
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
     AND e.retracted_at IS NULL
    WHERE s.tx_hash IS NOT NULL AND s.linked_event_id IS NULL
      AND (only_ids IS NULL OR s.id = ANY (only_ids))
    ORDER BY s.id, e.seq
  ) m
  WHERE i.id = m.id;
END
$$;
