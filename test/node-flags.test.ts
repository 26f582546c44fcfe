/**
 * The service's Node flags are written in the bin's shebang and repeated by the package scripts
 * that start it: they must not drift apart (a flag dropped from `npm start` would quietly give the
 * embedded default another memory profile than the one measured).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { serviceNodeFlags } from '../scripts/node-flags.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  scripts: Record<string, string>;
};

describe('the service Node flags', () => {
  const flags = serviceNodeFlags();

  it('are the measured ones', () => {
    expect(flags).toEqual(['--max-semi-space-size=2', '--heap-growing-percent=30', '--no-liftoff']);
  });

  it('npm start (the embedded default) passes the same', () => {
    expect(pkg.scripts.start).toContain(`node ${flags.join(' ')} bin/yield-service.mjs start`);
  });

  it.each(['start:api', 'start:worker'])(
    'npm run %s (processes sharing PostgreSQL) passes them with a larger young generation',
    (script) => {
      const postgres = serviceNodeFlags('postgres');
      expect(postgres).toEqual([
        '--max-semi-space-size=8',
        '--heap-growing-percent=30',
        '--no-liftoff',
      ]);
      expect(pkg.scripts[script]).toContain(
        `node ${postgres.join(' ')} bin/yield-service.mjs start`,
      );
    },
  );

  it('the Procfile (processes sharing PostgreSQL) passes the PostgreSQL flags', () => {
    const procfile = readFileSync(new URL('../Procfile', import.meta.url), 'utf8');
    const postgres = serviceNodeFlags('postgres').join(' ');
    for (const role of ['api', 'worker']) {
      expect(procfile).toContain(`ROLES=${role} node ${postgres} bin/yield-service.mjs start`);
    }
  });

  it.each(['pglite', 'postgres'] as const)(
    'are accepted by this Node on %s (an unknown V8 flag would stop the service starting)',
    (engine) => {
      const out = execFileSync(
        process.execPath,
        [...serviceNodeFlags(engine), '-e', 'process.stdout.write("ok")'],
        { encoding: 'utf8' },
      );
      expect(out).toBe('ok');
    },
  );
});
