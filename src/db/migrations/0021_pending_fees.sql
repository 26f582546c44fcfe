-- Fee figures a partner can reconcile day by day (DECISIONS, "Fee figures"): earned = minted +
-- pending, both read at the day-boundary block. The minted counters are the existing
-- *_fee_assets_total columns; these hold the pending part (what the engine's next accrual would
-- charge at that block, split as it splits it). daily_partner_fee / daily_service_fee now hold the
-- change of minted + pending.
--
-- Rows written before this migration have NULL here and daily figures of the old definition
-- (change of the minted counter only). They stay served by latest_metrics and apy-history, whose
-- figures did not change, but not by fee-stats; the metrics processor treats them as missing and
-- replaces each with the day recomputed from the chain on its next run (src/db/snapshots.ts).
ALTER TABLE daily_snapshots
  ADD COLUMN service_fee_pending numeric(78,0),
  ADD COLUMN partner_fee_pending numeric(78,0);
