/**
 * The per-request logger, made only when a request logs something. Fastify gives every request a
 * child of the service's logger carrying its request id; pino builds a child eagerly (its bindings
 * serialised through the redaction), which was ~2.5 % of the API's CPU under load for a line that,
 * at the default level, a 2xx never writes beyond the access line, and at `warn` never at all
 * (#33 item 7). This stands in for that child: it answers the level checks from the parent, and
 * makes the real child (the same `logger.child(bindings, options)` Fastify would have made, so every
 * line carries the same fields) on the first call that writes.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, Logger } from 'pino';

type WriteLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

class RequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  /** The real child, made once. */
  #real(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  get level(): LevelWithSilentOrString {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: LevelWithSilentOrString) {
    this.#real().level = level;
  }

  isLevelEnabled(level: LevelWithSilentOrString): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }

  #write(level: WriteLevel, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    (this.#real()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]) {
    this.#write('fatal', args);
  }
  error(...args: unknown[]) {
    this.#write('error', args);
  }
  warn(...args: unknown[]) {
    this.#write('warn', args);
  }
  info(...args: unknown[]) {
    this.#write('info', args);
  }
  debug(...args: unknown[]) {
    this.#write('debug', args);
  }
  trace(...args: unknown[]) {
    this.#write('trace', args);
  }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#real().child(bindings, options);
  }

  bindings(): Bindings {
    return this.#real().bindings();
  }
}

/**
 * Fastify's `childLoggerFactory`: a RequestLogger, or pino's own child at once when the route sets
 * its own log level or serializers (the level checks must then be the child's).
 */
export function requestLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) {
    return logger.child(bindings, options);
  }
  return new RequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}

/** Whether a request's logger writes `level` (Fastify's logger type omits pino's own check). */
export function logsAt(log: FastifyBaseLogger, level: LevelWithSilentOrString): boolean {
  return (log as unknown as Pick<Logger, 'isLevelEnabled'>).isLevelEnabled(level);
}
