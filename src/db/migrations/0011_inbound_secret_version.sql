-- The API caches inbound secrets with the read model; a created or rotated secret must drop that
-- cache like any other change a request can see.
CREATE TRIGGER inbound_secrets_insert_version AFTER INSERT ON inbound_secrets
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER inbound_secrets_update_version AFTER UPDATE ON inbound_secrets
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
