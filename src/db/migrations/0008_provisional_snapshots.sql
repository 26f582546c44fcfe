-- A provisional snapshot is written by the lifecycle when a product becomes active (DECISIONS:
-- latest_metrics is null only while pending_deploy): the engine's state at its deployment block,
-- for the deployment day, with no APY and no daily figures. The metrics processor replaces it with
-- the day's real row when the day closes; real rows are never changed.
ALTER TABLE daily_snapshots ADD COLUMN provisional boolean NOT NULL DEFAULT false;
