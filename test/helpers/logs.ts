/** Captures a logger's JSON lines in memory so tests can assert what was (not) logged. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger.ts';

export function captureLogger(level: 'info' | 'debug' = 'info'): {
  logger: Logger;
  lines: () => string[];
} {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger(level, sink);
  return { logger, lines: () => chunks.join('').split('\n').filter(Boolean) };
}
