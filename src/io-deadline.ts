/**
 * Deadlines that a busy process does not miss by its own fault.
 *
 * A plain timer that expires while the event loop is held (a long synchronous task, a GC pause, a
 * starved CPU) runs in the loop's timers phase, before the poll phase reads the sockets: an answer
 * that arrived in time, and sits unread in the socket, is judged late. Seen in CI: a process busy
 * for over a second timed out its Redis commands (ioredis's commandTimeout is such a timer), counted
 * rate limits in its own memory instead of Redis's, and two API processes let through twice a
 * shared budget. These deadlines, once their timer fires, wait one `setImmediate` (the check phase,
 * after this turn's poll phase has read whatever arrived) before they decide.
 */

/**
 * Calls `onExpired` once `ms` have passed and the process has read the I/O that arrived meanwhile;
 * returns a function that cancels it. `onExpired` decides whether the awaited thing is still
 * pending: by then an answer that was in the socket has been read and its promise settled.
 */
export function afterIo(ms: number, onExpired: () => void): () => void {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(onExpired);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
  };
}

/** Resolves with `work`'s result, or rejects with `DeadlineError` when it is not settled in `ms` (judged by `afterIo`). */
export function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = afterIo(ms, () => reject(new DeadlineError(ms)));
    work.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (err: unknown) => {
        cancel();
        reject(err);
      },
    );
  });
}

export class DeadlineError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'DeadlineError';
  }
}
