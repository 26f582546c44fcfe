-- Embed settings per partner environment: the public embed id the partner's page puts in the
-- iframe URL (not a secret: it only names which partner environment's products the embed shows),
-- and the parent origins allowed to frame it (sent as CSP frame-ancestors, exactly these).
-- Every partner environment has a row from the moment the partner exists (trigger below), so an
-- embed id never has to be "created"; an empty origin list frames nowhere.
CREATE TABLE embed_settings (
  partner_id       text NOT NULL REFERENCES partners(id),
  environment      text NOT NULL CHECK (environment IN ('live', 'test')),
  embed_id         text NOT NULL UNIQUE,
  allowed_origins  text[] NOT NULL DEFAULT '{}',
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partner_id, environment)
);

CREATE FUNCTION new_embed_id() RETURNS text LANGUAGE sql AS $$
  SELECT 'emb_' || replace(gen_random_uuid()::text, '-', '')
$$;

INSERT INTO embed_settings (partner_id, environment, embed_id)
SELECT p.id, e.env, new_embed_id() FROM partners p CROSS JOIN (VALUES ('live'), ('test')) e(env);

CREATE FUNCTION create_embed_settings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO embed_settings (partner_id, environment, embed_id)
  SELECT n.id, e.env, new_embed_id() FROM new_partners n CROSS JOIN (VALUES ('live'), ('test')) e(env);
  RETURN NULL;
END
$$;
CREATE TRIGGER partners_embed_settings AFTER INSERT ON partners
  REFERENCING NEW TABLE AS new_partners FOR EACH STATEMENT EXECUTE FUNCTION create_embed_settings();

-- The API processes cache embed settings under the read-model version: a change of origins
-- reaches every process within the cache's poll.
CREATE TRIGGER embed_settings_insert_version AFTER INSERT ON embed_settings
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
CREATE TRIGGER embed_settings_update_version AFTER UPDATE ON embed_settings
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bump_read_model_version();
