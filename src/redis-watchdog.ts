/**
 * Keeps a Redis connection honest: a connection that stops answering is destroyed, and ioredis
 * connects anew (its retryStrategy). Before, a connection that accepted bytes and answered nothing
 * (a peer gone behind a NAT or proxy, a frozen server) was kept for as long as it lived: /ready
 * answered 503 and every command waited out its timeout long after Redis was healthy again (#33).
 *
 * Two cases, checked every `intervalMs`:
 * - connected and ready: a PING. ioredis's socketTimeout (src/redis.ts) destroys the socket when
 *   no byte comes back in time, so an idle process finds out too, not only at its next request;
 * - connected but never ready (the handshake's INFO goes unanswered, which no timeout of
 *   ioredis's covers): the socket is destroyed once that has lasted `deadlineMs`.
 */
import type { Redis } from 'ioredis';

export function watchRedis(
  client: Redis,
  options: { intervalMs: number; deadlineMs: number },
): () => void {
  let handshakeSince: number | undefined;
  const timer = setInterval(() => {
    if (client.status === 'ready') {
      handshakeSince = undefined;
      // The outcome is not ours to report: a failure is the socket timeout's to act on.
      client.ping().catch(() => {});
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
