/** Wallet and chain failures in words, with the code the host receives in its `error` event. */
import { DepositLadderError } from '../../packages/sdk/src/engine/ladder.ts';
import { RevertedError } from './chain.ts';

export type ErrorCode =
  | 'user_rejected'
  | 'insufficient_balance'
  | 'transaction_reverted'
  | 'wrong_chain'
  | 'wallet_unavailable'
  | 'batch_failed'
  | 'request_failed';

export interface ShownError {
  code: ErrorCode;
  message: string;
}

export function describeError(err: unknown): ShownError {
  // The deposit ladder's failures say in words what happened and what moved.
  if (err instanceof DepositLadderError) {
    const known: ErrorCode[] = ['user_rejected', 'transaction_reverted', 'batch_failed'];
    const code = known.find((c) => c === err.code) ?? 'request_failed';
    return { code, message: err.message };
  }
  if (err instanceof RevertedError) {
    return {
      code: 'transaction_reverted',
      message:
        'The transaction was reverted by the network: nothing moved except the network fee. Check the amount and try again.',
    };
  }
  const code = (err as { code?: unknown })?.code;
  if (code === 4001 || code === 'ACTION_REJECTED') {
    return {
      code: 'user_rejected',
      message: 'You declined the request in your wallet. Nothing was sent.',
    };
  }
  if (code === 4100 || code === 4900 || code === 4901) {
    return {
      code: 'wallet_unavailable',
      message: 'The wallet is not connected or not reachable. Connect it and try again.',
    };
  }
  const text = String((err as { message?: unknown })?.message ?? err);
  if (/insufficient funds/i.test(text)) {
    return {
      code: 'insufficient_balance',
      message: 'Your wallet does not hold enough to pay the network fee for this transaction.',
    };
  }
  if (/revert/i.test(text)) {
    return {
      code: 'transaction_reverted',
      message:
        'The network refused this transaction (it would revert). Nothing was sent. Check the amount and try again.',
    };
  }
  return {
    code: 'request_failed',
    message: 'The wallet request failed. Try again; if it keeps failing, reload the page.',
  };
}
