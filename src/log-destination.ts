/**
 * Where the service's JSON logs go: a file descriptor (stdout), written asynchronously in batches,
 * that never blocks the process and never throws, whatever the descriptor has become.
 *
 * Why not pino's default destination (sonic-boom): when the reader of stdout is gone (the parent
 * died, the socket or pipe closed), its exit-time `flushSync` retries a write that fails with EPIPE
 * in an endless sleep loop, so a process told to exit sleeps forever. Here a broken descriptor
 * (EPIPE, ECONNRESET, EBADF…) switches logging off for good; a full one (EAGAIN) is retried on a
 * timer while the process runs and given a bounded time at exit. Lines that cannot be written are
 * dropped, counted, and never stop a shutdown.
 */
import { write as fsWrite, writeSync } from 'node:fs';

export interface LogDestination {
  write(line: string): void;
  /** Writes what is queued, synchronously, for at most `budgetMs`; drops the rest. */
  flushSync(budgetMs?: number): void;
  /**
   * Resolves once everything queued is written, or after `budgetMs`: a graceful shutdown awaits
   * it before exiting, since the exit-time flush must drop what a write still in flight holds.
   */
  drain(budgetMs?: number): Promise<void>;
  /** True once a write failed for a reason other than a full buffer: logging is off. */
  readonly broken: boolean;
  /** Lines dropped (broken descriptor, or an exit flush out of time). */
  readonly dropped: number;
}

/** Bytes buffered before lines are dropped: a reader that stopped reading cannot grow the heap. */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;
const RETRY_MS = 20;

function isFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EBUSY';
}

export function createLogDestination(fd = 1): LogDestination {
  let queue: string[] = [];
  let queuedBytes = 0;
  let writing = false;
  let broken = false;
  let dropped = 0;

  const fail = () => {
    broken = true;
    dropped += queue.length;
    queue = [];
    queuedBytes = 0;
  };

  const pump = () => {
    if (writing || broken || queue.length === 0) return;
    writing = true;
    const chunk = Buffer.from(queue.join(''));
    queue = [];
    queuedBytes = 0;
    const send = (buf: Buffer) => {
      fsWrite(fd, buf, 0, buf.length, null, (err, n) => {
        if (err) {
          if (isFull(err) && !broken) {
            setTimeout(() => send(buf), RETRY_MS).unref();
            return;
          }
          writing = false;
          fail();
          return;
        }
        if (n < buf.length) {
          send(buf.subarray(n));
          return;
        }
        writing = false;
        pump();
      });
    };
    send(chunk);
  };

  const destination: LogDestination = {
    write(line: string) {
      if (broken) {
        dropped++;
        return;
      }
      if (queuedBytes + line.length > MAX_QUEUED_BYTES) {
        dropped++;
        return;
      }
      queue.push(line);
      queuedBytes += line.length;
      // One write per turn of the event loop, batching the lines logged meanwhile.
      if (!writing && queue.length === 1) setImmediate(pump);
    },
    flushSync(budgetMs = 500) {
      // A write still in flight means the reader is slow or gone: a synchronous write could then
      // block the exit for good (a blocking descriptor whose reader stopped reading), so what is
      // queued is dropped. Otherwise the queue goes now, EAGAIN retried within the budget.
      if (broken || queue.length === 0) return;
      if (writing) {
        dropped += queue.length;
        queue = [];
        queuedBytes = 0;
        return;
      }
      let buf = Buffer.from(queue.join(''));
      queue = [];
      queuedBytes = 0;
      const deadline = Date.now() + budgetMs;
      while (buf.length > 0) {
        try {
          buf = buf.subarray(writeSync(fd, buf));
        } catch (err) {
          if (!isFull(err) || Date.now() > deadline) {
            broken = !isFull(err);
            dropped++;
            return;
          }
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        }
      }
    },
    async drain(budgetMs = 500) {
      const deadline = Date.now() + budgetMs;
      while ((writing || queue.length > 0) && !broken && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    get broken() {
      return broken;
    },
    get dropped() {
      return dropped;
    },
  };
  return destination;
}
