/**
 * The Redis client factory. Redis is optional: set REDIS_URL when several API processes must share
 * rate-limit budgets and cache invalidation. Commands fail fast while Redis is unreachable instead
 * of queueing without bound, so a request never hangs on it.
 */
import { type Command, Redis } from 'ioredis';
import { afterIo } from './io-deadline.ts';
import type { Logger } from './logger.ts';
import { watchRedis } from './redis-watchdog.ts';

export type { Redis };

/** How long a command, or a connection's silence, may last before it counts as failed. */
const REDIS_DEADLINE_MS = 1000;

/**
 * A client whose commands fail after REDIS_DEADLINE_MS without an answer, and whose connection is
 * then replaced, like ioredis's `commandTimeout` and `socketTimeout` together, but judged after the
 * process has read what arrived (src/io-deadline.ts): those options' plain timers failed commands,
 * and destroyed connections, whose answers sat unread while the process was busy.
 */
class DeadlineRedis extends Redis {
  /** Commands pass here again when re-sent (offline queue, reconnection): one deadline each. */
  readonly #armed = new WeakSet<Command>();

  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    if (!this.#armed.has(command)) {
      this.#armed.add(command);
      const sentOn = this.stream;
      let settled = false;
      const cancel = afterIo(REDIS_DEADLINE_MS, () => {
        if (settled) return;
        command.reject(new Error('Command timed out'));
        // A connection that left a command unanswered this long is silent (a hung server, a peer
        // lost behind a NAT or proxy, a handshake nobody answers): destroyed, and ioredis
        // connects anew. Ending it politely would wait for a FIN that never comes.
        if (sentOn && this.stream === sentOn && !sentOn.destroyed) {
          sentOn.destroy(new Error(`Redis did not answer a command in ${REDIS_DEADLINE_MS} ms`));
        }
      });
      const done = () => {
        settled = true;
        cancel();
      };
      command.promise.then(done, done);
    }
    return super.sendCommand(command, stream);
  }
}

export function createRedis(
  url: string,
  options: { keyPrefix?: string; logger?: Logger } = {},
): Redis {
  const client = new DeadlineRedis(url, {
    keyPrefix: options.keyPrefix,
    maxRetriesPerRequest: 1,
    // Queued only until the first connection: a command issued at start waits for it.
    enableOfflineQueue: true,
    connectTimeout: 2000,
    // No commandTimeout or socketTimeout: both are plain timers (see DeadlineRedis). A Redis
    // that accepts but does not answer (hung, overloaded) holds no command longer than
    // REDIS_DEADLINE_MS, and such a connection is replaced (DeadlineRedis; src/redis-watchdog.ts
    // finds it out while the process is idle).
    // A command is sent at most once. By default ioredis sends a closed connection's unanswered
    // commands again on the next one, after their callers were told they failed (the deadline
    // below): a rate-limit hit already counted in memory would count in Redis too.
    autoResendUnfulfilledCommands: false,
    // Reconnect with a capped backoff for as long as the process lives.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  // Once connected, a command issued while Redis is away fails at once instead of waiting in the
  // offline queue for a reconnection: the callers count in memory instead (src/http/fixed-window.ts),
  // and a request must not wait seconds per command. Measured by test/ops/faults.test.ts: with the
  // queue, each API request took ~3 s during a Redis outage.
  client.once('ready', () => {
    client.options.enableOfflineQueue = false;
  });
  reportConnection(client, options.logger);
  watchRedis(client, { intervalMs: REDIS_DEADLINE_MS, deadlineMs: 2 * REDIS_DEADLINE_MS });
  return client;
}

/**
 * The connection's errors, once per outage: a warn when it is lost (the first error), an info when
 * it is ready again; a connection that falls again within RELAPSE_MS of coming back is the same
 * outage (said once, seen under load in test/api/outages.test.ts). Without a listener ioredis writes every reconnection failure to stderr as
 * "Unhandled error event", several a second during an outage; the requests it fails say the rest
 * (src/http/outage.ts).
 */
function reportConnection(client: Redis, logger: Logger | undefined): void {
  let lostAt: number | undefined;
  /** When the connection was last back after an outage. */
  let backAt: number | undefined;
  /** The connection fell again within RELAPSE_MS of coming back: the same outage, said once. */
  let relapsed = false;
  client.on('error', (err: Error) => {
    if (lostAt !== undefined) return;
    lostAt = Date.now();
    // A connection that falls again right after it came back (a command that waited through a
    // busy moment, a socket left from the outage) is the outage going on, not a new one.
    if (backAt !== undefined && lostAt - backAt < RELAPSE_MS) {
      relapsed = true;
      return;
    }
    logger?.warn({ err }, 'redis connection lost; reconnecting');
  });
  client.on('ready', () => {
    if (lostAt === undefined) return;
    if (!relapsed) logger?.info({ downMs: Date.now() - lostAt }, 'redis connection ready again');
    lostAt = undefined;
    relapsed = false;
    backAt = Date.now();
  });
}

/** A loss this soon after the connection came back is counted with the outage before it. */
const RELAPSE_MS = 5 * REDIS_DEADLINE_MS;
