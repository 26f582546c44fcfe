/**
 * The embed's gas limit follows the SDK's rule (estimate + 25 % + FEE_ACCRUAL_GAS): the two send
 * the same engine calls, and the fee accrual's fixed cost is the same whoever sends them. The
 * end-to-end test (e2e.test.ts) checks that every transaction the embed sends asks for it.
 */
import { describe, expect, it } from 'vitest';
import { FEE_ACCRUAL_GAS as EMBED_ACCRUAL, gasLimit } from '../../embed-app/src/gas.ts';
import { FEE_ACCRUAL_GAS } from '../../packages/sdk/src/engine/index.ts';

describe("the embed's gas limit", () => {
  it("is the SDK's: the estimate, 25 % more, and the fee accrual's fixed allowance", () => {
    expect(EMBED_ACCRUAL).toBe(FEE_ACCRUAL_GAS);
    expect(FEE_ACCRUAL_GAS).toBe(150_000n);
    // A small call (an approve): the fixed allowance dominates; 25 % alone would add 11,500.
    expect(gasLimit(46_000n)).toBe(46_000n + 11_500n + 150_000n);
    // A deposit estimated where no fee was due: still covers the ~125,000 an accrual can add.
    expect(gasLimit(180_000n)).toBe(180_000n + 45_000n + 150_000n);
    expect(gasLimit(0n)).toBe(150_000n);
  });
});
