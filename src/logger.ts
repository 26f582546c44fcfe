/**
 * The one logger factory. Redaction is configured here, not remembered at call sites: any field
 * that can carry a secret is censored wherever it appears in a log object.
 */
import { type Logger, type LoggerOptions, pino } from 'pino';
import { createLogDestination, type LogDestination } from './log-destination.ts';
import { scrubSecrets } from './url-secrets.ts';

export type { Logger };

/** Paths censored in every log line (pino redact syntax; `*` matches one level). */
export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-service-signature"]',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers["x-service-signature"]',
  'apiKey',
  'api_key',
  'secret',
  'password',
  'masterKey',
  'privateKey',
  '*.apiKey',
  '*.api_key',
  '*.secret',
  '*.password',
  '*.masterKey',
  '*.privateKey',
  '*.databaseUrl',
  '*.DATABASE_URL',
  '*.REDIS_URL',
];

export function createLogger(
  level: LoggerOptions['level'] = 'info',
  destination?: NodeJS.WritableStream,
): Logger {
  const options: LoggerOptions = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    // Provider keys travel inside URLs and the errors that quote them: each finished line has the
    // registered URL secrets replaced, whatever field they reached (src/url-secrets.ts).
    hooks: { streamWrite: (line) => scrubSecrets(line) },
    base: { service: 'partner-yield' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (destination) return pino(options, destination);
  // stdout through a destination that cannot block or throw when stdout's reader is gone
  // (src/log-destination.ts); what is still queued at exit gets a bounded synchronous flush.
  return pino(options, stdoutDestination());
}

let stdout: LogDestination | undefined;
/** One destination for fd 1 per process, however many loggers write to it. */
function stdoutDestination(): LogDestination {
  if (!stdout) {
    const created = createLogDestination(1);
    process.once('exit', () => created.flushSync(200));
    stdout = created;
  }
  return stdout;
}

/**
 * Waits, at most `budgetMs`, until the log lines written so far to stdout are out: a graceful
 * shutdown calls it before `process.exit`, so "shutting down" and "shutdown complete" are not lost
 * when the last write is still in flight (it was, under load, in the process suite).
 */
export function drainLogs(budgetMs = 500): Promise<void> {
  return stdout ? stdout.drain(budgetMs) : Promise.resolve();
}
