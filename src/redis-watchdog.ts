/**
 * Keeps a Redis connection honest: a connection that stops answering is destroyed, and ioredis
 * connects anew (its retryStrategy). Before, a connection that accepted bytes and answered nothing
 * (a peer gone behind a NAT or proxy, a frozen server) was kept for as long as it lived: /ready
 * answered 503 and every command waited out its timeout long after Redis was healthy again (#33).
 *
 * Two cases, checked every `intervalMs`:
 * - connected and ready: a PING, one at a time. A command left unanswered past its deadline
 *   destroys its connection (src/redis.ts), so an idle process finds out too, not only at its
 *   next request;
 * - connected but never ready for `deadlineMs` (the handshake's commands have deadlines too; this
 *   is the backstop for a handshake stuck between them): the socket is destroyed.
 */
import type { Redis } from 'ioredis';

export function watchRedis(
  client: Redis,
  options: { intervalMs: number; deadlineMs: number },
): () => void {
  let handshakeSince: number | undefined;
  let probing = false;
  const timer = setInterval(() => {
    if (client.status === 'ready') {
      handshakeSince = undefined;
      // The outcome is not ours to act on: a PING left unanswered replaces the connection
      // (src/redis.ts's command deadline). One at a time, so a silent one is not piled on.
      if (probing) return;
      probing = true;
      const probed = () => {
        probing = false;
      };
      client.ping().then(probed, probed);
      return;
    }
    if (client.status !== 'connect') {
      handshakeSince = undefined;
      return;
    }
    handshakeSince ??= Date.now();
    if (Date.now() - handshakeSince >= options.deadlineMs) {
      handshakeSince = undefined;
      client.stream?.destroy(new Error('Redis did not answer the connection handshake in time'));
    }
  }, options.intervalMs);
  // Never what keeps a process alive.
  timer.unref();
  const stop = () => clearInterval(timer);
  client.once('end', stop);
  return stop;
}
