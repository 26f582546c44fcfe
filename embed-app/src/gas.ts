/**
 * The gas limit the embed asks the wallet to use for each transaction: the estimate, plus 25 %, plus
 * a fixed allowance for the engine's fee accrual — the SDK's rule (packages/sdk/src/engine,
 * `sendCalls` and `FEE_ACCRUAL_GAS`). An engine call accrues fees for the time since the last
 * one, and that cost does not scale with the call's: an estimate priced in a block where no fee was
 * due (another call accrued in the same second) can be ~125,000 gas short when the mined block
 * charges one, and a percentage of a small call's estimate does not cover that. Unused gas is not
 * charged. test/embed/gas.test.ts checks that the two rules stay the same.
 */
export const GAS_MARGIN_PERCENT = 25n;
export const FEE_ACCRUAL_GAS = 150_000n;

export function gasLimit(estimate: bigint): bigint {
  return estimate + (estimate * GAS_MARGIN_PERCENT) / 100n + FEE_ACCRUAL_GAS;
}
