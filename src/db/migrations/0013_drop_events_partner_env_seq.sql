-- events_partner_env_seq was made in 0002 for a per-partner event listing that never came: every
-- reader of events goes by id (deliveries, replays), by transaction (events_chain_log) or by the
-- rows of its own statement. It cost every insert a third index entry, measured on the indexer's
-- write of 20,000 events (bench:indexer, "the write alone"): PGlite 0.88–0.99 s → 0.51–0.53 s,
-- PostgreSQL 0.47–0.50 s → 0.34–0.42 s. A listing that needs an index adds the one it needs.
DROP INDEX events_partner_env_seq;
