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

  it.each(['start', 'start:api', 'start:worker'])('npm run %s passes the same', (script) => {
    expect(pkg.scripts[script]).toContain(`node ${flags.join(' ')} bin/yield-service.mjs start`);
  });

  it('are accepted by this Node (an unknown V8 flag would stop the service starting)', () => {
    const out = execFileSync(process.execPath, [...flags, '-e', 'process.stdout.write("ok")'], {
      encoding: 'utf8',
    });
    expect(out).toBe('ok');
  });
});
