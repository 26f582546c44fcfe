/**
 * The stdout log destination (src/log-destination.ts): `drain` resolves once every line written so
 * far is out, including the batch a write still has in flight, and gives up after its budget when
 * the reader has stopped. A graceful shutdown awaits it before `process.exit` (src/cli/main.ts).
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogDestination } from '../src/log-destination.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'pys-logdest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('log destination', () => {
  it('drain waits for the lines queued and in flight, in order', async () => {
    const file = path.join(dir, 'out.log');
    const fd = openSync(file, 'w');
    try {
      const dest = createLogDestination(fd);
      const lines = Array.from({ length: 200 }, (_, i) => `{"n":${i}}\n`);
      for (const l of lines.slice(0, 100)) dest.write(l);
      // The first batch goes out on the next turn; the rest is queued behind it.
      await new Promise((r) => setImmediate(r));
      for (const l of lines.slice(100)) dest.write(l);
      // Nothing has waited for the writes yet: what is on disk is at most the first batch.
      expect(readFileSync(file, 'utf8').length).toBeLessThan(lines.join('').length);
      await dest.drain(2_000);
      expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
      expect(dest.dropped).toBe(0);
    } finally {
      closeSync(fd);
    }
  });
});
