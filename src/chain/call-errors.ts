/**
 * What a failed contract read means. A call that reverts, or returns no data at all, was answered by
 * the chain: the contract has no such function (an older engine, a vault without an optional view)
 * or refuses at that state. That is never an RPC failure, and trying again at the same state gives
 * the same answer. The optional-view reads and the worker's retry classification both ask here.
 */
import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError } from 'viem';

export function isRevertOrNoData(err: unknown): boolean {
  return (
    err instanceof BaseError &&
    !!err.walk(
      (e) =>
        e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError,
    )
  );
}
