-- Products, daily snapshots, stored events, indexer cursors and worker leases: what the chain
-- workers write and the API and webhooks read. Amounts are numeric(78,0) base units (uint256 fits);
-- APYs numeric(30,6), exactly the 6-place decimal fractions the API serves.

CREATE TABLE products (
  id                        text PRIMARY KEY,                 -- prd_…
  partner_id                text NOT NULL REFERENCES partners(id),
  environment               text NOT NULL CHECK (environment IN ('live', 'test')),
  slug                      text NOT NULL UNIQUE,
  display_name              text NOT NULL,
  risk_label                text NOT NULL CHECK (risk_label IN ('low', 'medium', 'high')),
  chain_id                  bigint NOT NULL,
  status                    text NOT NULL
                            CHECK (status IN ('pending_deploy', 'active', 'paused', 'deprecated')),
  vault_kind                text NOT NULL CHECK (vault_kind IN ('sync', 'async')),
  engine_address            text,                             -- EIP-55; null while pending_deploy
  engine_name               text NOT NULL,                    -- ERC-20 name of the engine share
  engine_symbol             text NOT NULL,
  share_decimals            integer,                          -- engine decimals(), known once deployed
  underlying_vault_address  text NOT NULL,
  asset_address             text NOT NULL,
  asset_symbol              text NOT NULL,
  asset_decimals            integer NOT NULL CHECK (asset_decimals BETWEEN 0 AND 77),
  service_fee_bps           integer NOT NULL CHECK (service_fee_bps BETWEEN 0 AND 10000),
  partner_fee_bps           integer NOT NULL CHECK (partner_fee_bps BETWEEN 0 AND 10000),
  service_fee_recipient     text NOT NULL,
  partner_fee_recipient     text NOT NULL,
  -- USD price of one whole asset unit as a decimal string; null = USD-pegged (price 1).
  usd_price                 text,
  deployed_block            bigint,
  deployed_at               timestamptz,
  -- Why a paused product is paused: the operator's command, the engine's pause flag on chain, or
  -- the upstream vault halted. Resuming needs every recorded reason gone.
  operator_paused           boolean NOT NULL DEFAULT false,
  chain_paused              boolean NOT NULL DEFAULT false,
  upstream_halted           boolean NOT NULL DEFAULT false,
  -- Deployment in flight: the tx hash is recorded before waiting, so a restarted worker resumes it.
  deploy_tx_hash            text,
  status_changed_at         timestamptz NOT NULL DEFAULT now(),
  created_at                timestamptz NOT NULL DEFAULT now(),
  updated_at                timestamptz NOT NULL DEFAULT now(),
  UNIQUE (chain_id, engine_address)
);
CREATE INDEX products_partner_env ON products (partner_id, environment);

-- One row per product per UTC day: chain state at the last block before the next day's 00:00 UTC,
-- and the figures derived from it and from the previous day's row.
CREATE TABLE daily_snapshots (
  product_id                text NOT NULL REFERENCES products(id),
  date                      date NOT NULL,
  block_number              bigint NOT NULL,
  block_timestamp           timestamptz NOT NULL,
  engine_total_assets       numeric(78,0) NOT NULL,
  engine_total_supply       numeric(78,0) NOT NULL,           -- pending fee shares included
  underlying_total_assets   numeric(78,0) NOT NULL,
  underlying_total_supply   numeric(78,0) NOT NULL,
  service_fee_assets_total  numeric(78,0) NOT NULL,           -- cumulative, accrued on chain
  partner_fee_assets_total  numeric(78,0) NOT NULL,
  deposits_assets           numeric(78,0) NOT NULL DEFAULT 0, -- flows of the day, from logs
  withdrawals_assets        numeric(78,0) NOT NULL DEFAULT 0,
  underlying_apy            numeric(30,6),                    -- null: no previous day to compare
  net_apy_for_user          numeric(30,6),
  daily_yield_assets        numeric(78,0),                    -- may be negative (a loss)
  daily_partner_fee         numeric(78,0),
  daily_service_fee         numeric(78,0),
  created_at                timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (product_id, date)
);

-- Events: written once, with a unique dedupe key, then delivered by the webhook dispatcher. The
-- payload is the exact JSON text that is signed and sent (jsonb would reorder keys and reformat
-- numbers). `seq` orders the delivery queue.
CREATE TABLE events (
  id                        text PRIMARY KEY,                 -- evt_…
  seq                       bigserial NOT NULL UNIQUE,
  partner_id                text NOT NULL REFERENCES partners(id),
  environment               text NOT NULL CHECK (environment IN ('live', 'test')),
  product_id                text REFERENCES products(id),
  event_type                text NOT NULL,
  dedupe_key                text NOT NULL UNIQUE,
  payload                   text NOT NULL,
  occurred_at               timestamptz NOT NULL,
  chain_id                  bigint,
  block_number              bigint,
  block_hash                text,
  tx_hash                   text,
  log_index                 integer,
  created_at                timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_partner_env_seq ON events (partner_id, environment, seq);
CREATE INDEX events_tx ON events (chain_id, tx_hash);

-- The log indexer's durable position per chain: every block up to block_number is indexed, and
-- block_hash is the hash it had then (the continuity check for the next range).
CREATE TABLE chain_cursors (
  chain_id                  bigint PRIMARY KEY,
  block_number              bigint NOT NULL,
  block_hash                text NOT NULL,
  updated_at                timestamptz NOT NULL DEFAULT now()
);

-- Leases: one holder at a time per named job (e.g. `indexer:31337`), renewed while it works and
-- taken over once it expires. Portable across PGlite and PostgreSQL, unlike session advisory locks.
CREATE TABLE leases (
  name                      text PRIMARY KEY,
  holder                    text NOT NULL,
  expires_at                timestamptz NOT NULL
);
