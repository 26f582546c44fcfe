/**
 * The rehearsal chain's block production. The node is started without mining of its own
 * (`--no-mining`): like a public chain's sequencer, this mines one block every `intervalMs`
 * whatever happens, and can be held for a moment, so that a transaction can be put in the pool
 * and the next block's base fee raised before any block includes it (the stuck transaction step).
 */
import type { RpcRequest } from '../../chain/local/rpc.ts';

export interface BlockProducer {
  /** Waits for the block being mined, then mines none until resume(). */
  hold(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
}

export function startBlockProducer(rpc: RpcRequest, intervalMs: number): BlockProducer {
  let held = false;
  let stopped = false;
  let mining: Promise<void> | undefined;
  const tick = () => {
    if (held || stopped || mining) return;
    mining = rpc('evm_mine', [])
      .then(
        () => {},
        () => {}, // a node being stopped; the steps see the chain's state themselves
      )
      .finally(() => {
        mining = undefined;
      });
  };
  const timer = setInterval(tick, intervalMs);
  return {
    async hold() {
      held = true;
      await mining;
    },
    resume() {
      held = false;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await mining;
    },
  };
}
