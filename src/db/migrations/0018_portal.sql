-- The partner portal (part 1): team members, one-time sign-in links, sessions, passkeys and the
-- audit log; API keys learn who created them, when they were last used, and a revocation that may
-- lie in the future (a roll's overlap).

-- A partner's team. An email belongs to at most one active member (sign-in is by email), compared
-- case-insensitively. A removed member keeps the row: the audit log and keys still name them.
CREATE TABLE portal_members (
  id          text PRIMARY KEY,                                  -- mbr_…
  partner_id  text NOT NULL REFERENCES partners(id),
  email       text NOT NULL,
  role        text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
  invited_by  text REFERENCES portal_members(id),                -- null: the operator's CLI
  created_at  timestamptz NOT NULL DEFAULT now(),
  removed_at  timestamptz
);
CREATE UNIQUE INDEX portal_members_active_email ON portal_members (lower(email))
  WHERE removed_at IS NULL;
CREATE INDEX portal_members_partner ON portal_members (partner_id);

-- One-time sign-in links: only the SHA-256 of the token is kept; used once, within 15 minutes.
CREATE TABLE portal_sign_in_tokens (
  token_hash  bytea PRIMARY KEY,
  member_id   text NOT NULL REFERENCES portal_members(id),
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX portal_sign_in_tokens_member ON portal_sign_in_tokens (member_id);

-- Server-side sessions (when no Redis is configured): the cookie carries a random id, the table
-- only its SHA-256. A session ends after inactivity (last_seen_at) or at sign-out.
CREATE TABLE portal_sessions (
  id_hash       bytea PRIMARY KEY,
  member_id     text NOT NULL REFERENCES portal_members(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  ip            text,
  user_agent    text
);
CREATE INDEX portal_sessions_member ON portal_sessions (member_id);

-- WebAuthn credentials (passkeys) of members.
CREATE TABLE portal_passkeys (
  id            text PRIMARY KEY,                                -- credential id, base64url
  member_id     text NOT NULL REFERENCES portal_members(id),
  public_key    bytea NOT NULL,
  counter       bigint NOT NULL DEFAULT 0,
  transports    text NOT NULL DEFAULT '',                        -- comma-separated
  name          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);
CREATE INDEX portal_passkeys_member ON portal_passkeys (member_id);

-- Every change a member (or the operator) makes: who, when, from where.
CREATE TABLE portal_audit_log (
  id           text PRIMARY KEY,                                 -- aud_…
  partner_id   text NOT NULL REFERENCES partners(id),
  member_id    text REFERENCES portal_members(id),               -- null: the operator's CLI
  actor        text NOT NULL,                                    -- the member's email, or "operator"
  action       text NOT NULL,                                    -- key.created, member.removed, …
  environment  text CHECK (environment IN ('live', 'test')),
  target       text,                                             -- what was acted on (key_…, an email)
  ip           text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX portal_audit_log_partner ON portal_audit_log (partner_id, created_at DESC);

-- Keys: who made them (null: the operator's CLI). revoked_at may now lie in the future: a rolled
-- key keeps working until then.
ALTER TABLE api_keys ADD COLUMN created_by text REFERENCES portal_members(id);

-- When a key was last used, at most one write a minute per key. Its own table, without the
-- read-model triggers of api_keys: a use must not invalidate every API process's cache.
CREATE TABLE api_key_usage (
  key_id        text PRIMARY KEY REFERENCES api_keys(id),
  last_used_at  timestamptz NOT NULL
);
