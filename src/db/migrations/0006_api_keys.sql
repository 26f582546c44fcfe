-- Partner API keys. Only the SHA-256 of a key is stored; after creation the prefix and the last four
-- characters are all that is ever shown. A revoked key keeps its row (it answers revoked_api_key).
CREATE TABLE api_keys (
  id           text PRIMARY KEY,                          -- key_…
  partner_id   text NOT NULL REFERENCES partners(id),
  environment  text NOT NULL CHECK (environment IN ('live', 'test')),
  key_hash     bytea NOT NULL UNIQUE,                     -- sha256(full key)
  prefix       text NOT NULL,                             -- svc_live_ or svc_test_
  last4        text NOT NULL,
  name         text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_keys_partner ON api_keys (partner_id, environment);
