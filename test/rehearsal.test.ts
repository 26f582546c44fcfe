/**
 * `yield-service rehearse` (src/cli/rehearsal/run.ts) end to end, as the bin runs it (the same
 * commander program, in this process): a fresh anvil with Base's chain id, a remote signer, the
 * worker, an HTTPS receiver. Every step must print `ok` and the command exit 0; a step that fails
 * fails this test. A second run made to fail early (blocks slower than the step timeout) shows the
 * failure as printed: FAILED, the steps not run, what to do next, exit code 1, nothing left behind.
 */
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { REHEARSAL_STEPS } from '../src/cli/rehearsal/run.ts';
import { runCliInProcess } from './helpers/cli.ts';

const leftovers = () => readdirSync(tmpdir()).filter((n) => n.startsWith('yield-rehearsal-'));
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const stepLine = (name: string, status: string) =>
  new RegExp(`^\\s*\\d+\\s+${literal(name)}\\s+${status}\\s`, 'm');

describe('yield-service rehearse', () => {
  it('runs every step green on a fresh anvil with chain id 8453 and a remote signer', async () => {
    const before = new Set(leftovers());
    const t0 = Date.now();
    const { code, out, err } = await runCliInProcess(['rehearse'], { env: {} });
    const ms = Date.now() - t0;
    expect(err, out).toBe('');
    expect(code, out).toBe(0);
    for (const name of REHEARSAL_STEPS) expect(out, name).toMatch(stepLine(name, 'ok'));
    expect(out).not.toMatch(/FAILED|skip/);
    expect(out).toContain(`All ${REHEARSAL_STEPS.length} steps passed`);
    expect(out).toMatch(/chain id 8453/);
    expect(out).toMatch(/signature valid, amount "250", block \d+/);
    expect(out).toMatch(/replaced after 3 blocks .* \(attempt 2, /);
    // No key material, no signing secret, no full-length hash (keys are 64 hex digits too).
    expect(out).not.toMatch(/[0-9a-fA-F]{64}/);
    expect(out).not.toContain('whsec_');
    expect(leftovers().filter((n) => !before.has(n))).toEqual([]);
    // The run's own figures, in the suite's output.
    console.log(`rehearsal took ${ms} ms\n${out}`);
  }, 180_000);

  it('a failing step prints FAILED, the steps not run and what to do next, exits 1 and cleans up', async () => {
    const before = new Set(leftovers());
    // A block every 10 s, and 5 s per step: the signer's funding transaction is never mined in time.
    const { code, out } = await runCliInProcess(
      ['rehearse', '--block-ms', '10000', '--step-timeout', '5'],
      { env: {} },
    );
    expect(code, out).toBe(1);
    expect(out).toMatch(stepLine('remote signer', 'ok'));
    expect(out).toMatch(stepLine('configure', 'FAILED'));
    expect(out).toMatch(stepLine('later operations', 'skip'));
    expect(out).toContain('Rehearsal FAILED at "configure"');
    expect(out).toContain('What to do next:');
    expect(leftovers().filter((n) => !before.has(n))).toEqual([]);
  }, 60_000);
});
