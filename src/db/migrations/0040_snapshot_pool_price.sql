-- #28: the price a pool holder gets, apart from the engine's totals. On an asynchronous product the
-- totals also count the open redeem requests (escrowed shares; their underlying shares and reserved
-- asset), which follow the underlying until they settle and pay their fee at the claim: the net APY
-- a holder earns is the active pool's (activeAssets / (activeSupply + pending fee shares)).
-- Null on rows written before: the APY then falls back to the totals, as it was computed.
ALTER TABLE daily_snapshots ADD COLUMN engine_pool_assets numeric(78,0);
ALTER TABLE daily_snapshots ADD COLUMN engine_pool_supply numeric(78,0);
