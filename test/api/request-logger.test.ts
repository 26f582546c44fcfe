import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { logsAt, requestLoggerFactory } from '../../src/http/request-logger.ts';
import { createLogger, type Logger } from '../../src/logger.ts';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

describe('request logger (made when a request first writes)', () => {
  it('writes the same lines as pino child, with the request id, and only at enabled levels', () => {
    const { lines, stream } = capture();
    const parent = createLogger('info', stream);
    const log = requestLoggerFactory(parent, { reqId: 'req_1' }, {});
    expect(logsAt(log, 'debug')).toBe(false);
    expect(logsAt(log, 'info')).toBe(true);
    log.debug('not written');
    log.info({ a: 1, apiKey: 'svc_live_secret' }, 'written');
    log.error(new Error('boom'), 'failed');
    expect(lines.map((l) => l.msg)).toEqual(['written', 'failed']);
    expect(lines.every((l) => l.reqId === 'req_1')).toBe(true);
    expect(lines[0]).toMatchObject({ a: 1, apiKey: '[redacted]', level: 30 });
    expect((lines[1]!.err as { message: string }).message).toBe('boom');
  });

  it('follows the parent level until its own is set', () => {
    const { lines, stream } = capture();
    const parent = createLogger('warn', stream);
    const log = requestLoggerFactory(parent, { reqId: 'req_2' }, {});
    log.info('dropped');
    expect(log.level).toBe('warn');
    log.level = 'debug';
    expect(parent.level).toBe('warn');
    log.debug('kept');
    expect(lines.map((l) => [l.msg, l.reqId])).toEqual([['kept', 'req_2']]);
    expect((log.child({ extra: true }) as unknown as Logger).bindings()).toMatchObject({
      reqId: 'req_2',
      extra: true,
    });
  });

  it('gives a route with its own log level a real child at once', () => {
    const { lines, stream } = capture();
    const parent = createLogger('info', stream);
    const log = requestLoggerFactory(parent, { reqId: 'req_3' }, { level: 'error' });
    log.warn('dropped');
    log.error('kept');
    expect(lines.map((l) => l.msg)).toEqual(['kept']);
  });
});
