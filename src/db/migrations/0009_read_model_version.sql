-- A version of what the partner API reads (products, daily snapshots, API keys), bumped by
-- triggers whenever a change a reader can see is committed. API processes poll this one row to
-- drop their caches, so every writer (worker, CLI, another process) invalidates them without
-- knowing they exist. Statement-level triggers with transition tables bump once per statement, and
-- not at all when a statement changed no row (ON CONFLICT DO NOTHING, a no-op UPDATE).
CREATE TABLE data_versions (
  name     text PRIMARY KEY,
  version  bigint NOT NULL
);
INSERT INTO data_versions (name, version) VALUES ('read_model', 0);

CREATE FUNCTION bump_read_model_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM changed_rows) THEN
    UPDATE data_versions SET version = version + 1 WHERE name = 'read_model';
  END IF;
  RETURN NULL;
END
$$;

-- Products: inserts, and updates of what the API shows (not the worker's bookkeeping columns,
-- which it rewrites every few seconds).
CREATE FUNCTION bump_read_model_version_on_product_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
    WHERE (o.status, o.engine_address, o.share_decimals, o.display_name, o.risk_label, o.usd_price,
           o.service_fee_bps, o.partner_fee_bps, o.slug, o.environment)
          IS DISTINCT FROM
          (n.status, n.engine_address, n.share_decimals, n.display_name, n.risk_label, n.usd_price,
           n.service_fee_bps, n.partner_fee_bps, n.slug, n.environment)
  ) THEN
    UPDATE data_versions SET version = version + 1 WHERE name = 'read_model';
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER products_insert_version AFTER INSERT ON products
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER products_update_version AFTER UPDATE ON products
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version_on_product_update();
CREATE TRIGGER snapshots_insert_version AFTER INSERT ON daily_snapshots
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER snapshots_update_version AFTER UPDATE ON daily_snapshots
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER snapshots_delete_version AFTER DELETE ON daily_snapshots
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER api_keys_insert_version AFTER INSERT ON api_keys
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER api_keys_update_version AFTER UPDATE ON api_keys
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
