/**
 * Local chains of this process whose state is still to be saved (src/chain/local/anvil.ts): from
 * their start until their stop has written the state (or failed to). The service's hard exit at
 * SHUTDOWN_TIMEOUT_MS waits for them, up to a bound: cut short, a chain is killed with the process
 * and loses what it did since its last save (on a first run, the whole chain). The stop itself is
 * not slowed: past half the timeout it cuts what is in flight and goes on to save the chain.
 */
let unsaved = 0;

export function hasUnsavedChain(): boolean {
  return unsaved > 0;
}

/** Marks one chain as unsaved; the returned function marks it saved (idempotent). */
export function unsavedChain(): () => void {
  unsaved++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    unsaved--;
  };
}
