import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, describeSettings, loadConfig } from '../src/config.ts';
import { DEFAULT_INTERVALS } from '../src/worker/jobs.ts';

describe('config', () => {
  it('has working defaults: embedded storage, both roles, port 3000', () => {
    const c = loadConfig({});
    expect(c.ROLES).toEqual(['api', 'worker']);
    expect(c.PORT).toBe(3000);
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.DATA_DIR).toBe(path.resolve('./data'));
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('parses valid values', () => {
    const c = loadConfig({
      PORT: '8080',
      ROLES: 'worker',
      DATABASE_URL: 'postgres://u:p@db:5432/x',
      LOG_LEVEL: 'debug',
    });
    expect(c).toMatchObject({ PORT: 8080, ROLES: ['worker'], LOG_LEVEL: 'debug' });
  });

  it.each([
    [{ PORT: 'abc' }, /^PORT: expected an integer from 0 to 65535 \(got "abc"\)$/],
    [{ PORT: '70000' }, /^PORT: /],
    [{ ROLES: 'api,cron' }, /^ROLES: expected a comma-separated list of api, worker/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: expected one of/],
    [
      { DATABASE_URL: 'mysql://x' },
      /^DATABASE_URL: expected a postgres:\/\/ or postgresql:\/\/ URL$/,
    ],
    [{ REDIS_URL: 'not a url' }, /^REDIS_URL: /],
    [{ SHUTDOWN_TIMEOUT_MS: '5' }, /^SHUTDOWN_TIMEOUT_MS: /],
  ])('rejects %o with one line naming the variable', (env, message) => {
    let err: unknown;
    try {
      loadConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('\n');
  });

  it('never echoes a connection URL, which may hold a password', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://user:s3cret@host/db' })).toThrow(
      /^DATABASE_URL: expected a postgres/,
    );
    try {
      loadConfig({ DATABASE_URL: 'mysql://user:s3cret@host/db' });
    } catch (e) {
      expect((e as Error).message).not.toContain('s3cret');
    }
  });

  it('reads CONFIG_FILE; environment variables win over it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pys-config-'));
    const file = path.join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ PORT: 4000, LOG_LEVEL: 'warn' }));
    const c = loadConfig({ CONFIG_FILE: file, LOG_LEVEL: 'error' });
    expect(c.PORT).toBe(4000);
    expect(c.LOG_LEVEL).toBe('error');
    writeFileSync(file, JSON.stringify({ PORTT: 1 }));
    expect(() => loadConfig({ CONFIG_FILE: file })).toThrow(/unknown setting "PORTT"/);
    expect(() => loadConfig({ CONFIG_FILE: path.join(dir, 'missing.json') })).toThrow(
      /^CONFIG_FILE: cannot read/,
    );
  });

  it("defaults the worker's polling to the jobs' own intervals", () => {
    const c = loadConfig({});
    expect(c.CHAIN_POLL_INTERVAL_MS).toBe(DEFAULT_INTERVALS.lifecycleMs);
    expect(c.CHAIN_POLL_INTERVAL_MS).toBe(DEFAULT_INTERVALS.indexerMs);
    expect(c.DAILY_METRICS_INTERVAL_MS).toBe(DEFAULT_INTERVALS.metricsMs);
    expect(() => loadConfig({ CHAIN_POLL_INTERVAL_MS: '50' })).toThrow(ConfigError);
  });

  it('every setting is documented in the README configuration table', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const s of describeSettings()) {
      expect(readme, `README lacks ${s.name}`).toMatch(
        new RegExp(`^\\|\\s*\`${s.name}\`\\s*\\|`, 'm'),
      );
    }
  });
});
