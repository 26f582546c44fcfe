-- The indexer stores events by the thousand (a range of logs per transaction). Per-row costs of that
-- write go or become set-based; the figures are in docs/decisions.md ("Indexer writes").
--
-- 1. Foreign keys. Each row's check looked up and share-locked its partner and product row, about a
--    third of the write. Partners and products are never deleted (deprecation is a status), so
--    forbidding deletes keeps every reference valid, and one check per statement over the inserted
--    rows (below) rejects a reference to a missing row, as the foreign keys did. It also checks
--    what they could not: the product belongs to the event's partner and environment.
-- 2. Chain-log events are deduplicated by (event_type, chain_id, tx_hash, log_index), the spec's own
--    key, through a unique index on those columns, which also serves the lookups by transaction
--    that events_tx served; their dedupe_key text (the same four fields joined) is no longer
--    written. Other events keep their dedupe_key, unique where present.
-- 3. The unique index on seq: seq comes from its own sequence, and every query orders by it
--    through events_partner_env_seq or the inserted rows themselves.
ALTER TABLE events
  DROP CONSTRAINT events_partner_id_fkey,
  DROP CONSTRAINT events_product_id_fkey,
  DROP CONSTRAINT events_seq_key,
  DROP CONSTRAINT events_dedupe_key_key,
  ALTER COLUMN dedupe_key DROP NOT NULL,
  ADD CONSTRAINT events_deduplicated CHECK (dedupe_key IS NOT NULL
    OR (chain_id IS NOT NULL AND tx_hash IS NOT NULL AND log_index IS NOT NULL));
CREATE UNIQUE INDEX events_dedupe_key ON events (dedupe_key) WHERE dedupe_key IS NOT NULL;
DROP INDEX events_tx;
CREATE UNIQUE INDEX events_chain_log ON events (chain_id, tx_hash, log_index, event_type);

CREATE FUNCTION forbid_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% rows are never deleted (deprecate a product instead)', TG_TABLE_NAME
    USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER partners_never_deleted BEFORE DELETE OR TRUNCATE ON partners
  FOR EACH STATEMENT EXECUTE FUNCTION forbid_delete();
CREATE TRIGGER products_never_deleted BEFORE DELETE OR TRUNCATE ON products
  FOR EACH STATEMENT EXECUTE FUNCTION forbid_delete();

-- One check per statement: the distinct (partner, environment, product) triples inserted, each of
-- which must name an existing partner and, when a product is given, a product of that partner and
-- environment.
CREATE FUNCTION check_event_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT k.partner_id, k.environment, k.product_id INTO bad
  FROM (SELECT DISTINCT partner_id, environment, product_id FROM new_events) k
  WHERE NOT EXISTS (SELECT 1 FROM partners p WHERE p.id = k.partner_id)
     OR (k.product_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM products r
           WHERE r.id = k.product_id AND r.partner_id = k.partner_id
             AND r.environment = k.environment))
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'event references no such partner % or product % (environment %)',
      bad.partner_id, bad.product_id, bad.environment
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER events_check_references AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION check_event_references();
