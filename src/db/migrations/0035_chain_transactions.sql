-- #29: the operator's transactions (pause, resume, deprecate, fee changes), one row per nonce.
--
-- A transaction is recorded, signed, BEFORE it is broadcast, so a process that dies at any point
-- leaves a row the next one follows: rebroadcast while the node does not know it, replaced with
-- higher fees at the same nonce when it waits too long, and the nonce never handed out twice (the
-- next nonce is past every pending row, whatever the node's pool remembers after its own restart).
-- A replacement updates the row (tx_hash, raw_tx, fees) and appends the new hash to `hashes`: any
-- attempt may be the one mined. raw_tx holds signed bytes, which become public once broadcast; the
-- key that signed them is never stored (see src/chain/signer.ts).
CREATE TABLE chain_transactions (
  id bigserial PRIMARY KEY,
  chain_id integer NOT NULL,
  sender text NOT NULL,                         -- lowercase address
  nonce integer NOT NULL,
  purpose text NOT NULL,                        -- e.g. 'pause usdc-flex' (what the operator asked)
  to_address text,
  data text NOT NULL,
  value numeric(78, 0) NOT NULL DEFAULT 0,
  gas numeric(78, 0) NOT NULL,
  max_fee_per_gas numeric(78, 0) NOT NULL,
  max_priority_fee_per_gas numeric(78, 0) NOT NULL,
  tx_hash text NOT NULL,                        -- the latest attempt
  raw_tx text NOT NULL,
  hashes text[] NOT NULL,                       -- every attempt, oldest first
  attempts integer NOT NULL DEFAULT 1,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'mined', 'reverted', 'dropped')),
  sent_block bigint NOT NULL,                   -- head when the latest attempt was signed
  mined_tx_hash text,
  block_number bigint,
  fee_paid numeric(78, 0),                      -- gasUsed x effectiveGasPrice, in wei
  error text,                                   -- why it reverted or was dropped, and what to do
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (chain_id, sender, nonce)
);

CREATE INDEX chain_transactions_pending ON chain_transactions (chain_id, sender)
  WHERE status = 'pending';
CREATE INDEX chain_transactions_recent ON chain_transactions (created_at DESC);
