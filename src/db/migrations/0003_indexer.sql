-- Log indexer bookkeeping beside chain_cursors.
--
-- indexer_engines: the engines the per-chain cursor already covers. An engine seen for the first time
-- whose deployed block is at or below the cursor makes the indexer rewind the cursor to just before
-- that block (re-indexing is a no-op for logs already stored: dedupe keys), so its early logs are
-- never skipped.
CREATE TABLE indexer_engines (
  chain_id                  bigint NOT NULL,
  engine_address            text NOT NULL,                    -- lowercase
  product_id                text NOT NULL REFERENCES products(id),
  added_at                  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (chain_id, engine_address)
);

-- The last positions the cursor held (block number and the hash it had then), newest kept. After a
-- reorg deeper than the confirmation depth the indexer rewinds to the newest entry whose hash the
-- chain still has, instead of guessing how far back the fork began.
CREATE TABLE chain_cursor_history (
  chain_id                  bigint NOT NULL,
  block_number              bigint NOT NULL,
  block_hash                text NOT NULL,
  PRIMARY KEY (chain_id, block_number)
);
