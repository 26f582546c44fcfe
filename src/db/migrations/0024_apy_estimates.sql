-- Launch-day pricing (#14): until an engine has a full day of its own, its rows have no measured
-- APY (underlying_apy / net_apy_for_user are NULL: there is no previous engine day). These hold an
-- ESTIMATE for such rows, from the underlying vault's own share price at two consecutive day
-- boundaries (the chain has the underlying's history from before the engine existed), with the
-- engine's fees applied to the gain (src/sync/metrics/underlying-estimate.ts). The API serves them,
-- labelled `apy_basis: "underlying_estimate"`, only where no measured APY exists; apy-history and
-- fee-stats never list them. NULL on every row that has its own APY, and on a first day whose
-- underlying has no full day of history either.
ALTER TABLE daily_snapshots
  ADD COLUMN estimated_underlying_apy numeric(30,6),
  ADD COLUMN estimated_net_apy numeric(30,6);
