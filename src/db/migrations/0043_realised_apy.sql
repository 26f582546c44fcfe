-- Realised APYs (issue #35): the net and underlying APY realised over the last 7 and 30 days,
-- from the share prices at the boundaries of day D−7 (D−30) and day D, annualised as the daily
-- figure is: (pps_D / pps_{D−N})^(365/N) − 1, 6 places (src/sync/metrics/compute.ts). Written by
-- the metrics processor with the day's row; null when the row of D−N does not exist (a product
-- younger than the window, or a missing day) and on rows written before this migration.
ALTER TABLE daily_snapshots
  ADD COLUMN net_apy_7d          numeric(30,6),
  ADD COLUMN net_apy_30d         numeric(30,6),
  ADD COLUMN underlying_apy_7d   numeric(30,6),
  ADD COLUMN underlying_apy_30d  numeric(30,6);
