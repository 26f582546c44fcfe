/**
 * The Node flags the service runs with, written once in the bin's shebang
 * (`#!/usr/bin/env -S node <flags>`, bin/yield-service.mjs says why each): the embedded default's
 * (`npm start`, PGlite in the process). A process on PostgreSQL (`npm run start:api`,
 * `start:worker`: several processes share one database, which PGlite cannot) takes a larger
 * young generation: it has no WASM heap in its RSS, and the scavenger's time per answer halves
 * (docs/maintainers/decisions.md, "Node flags"). test/node-flags.test.ts keeps the package
 * scripts equal to these, and the benchmarks start the service with exactly these, per engine, so
 * what they measure is what runs.
 */
import { readFileSync } from 'node:fs';

const BIN = new URL('../bin/yield-service.mjs', import.meta.url);

/** The young generation's semi-space, in MiB, of a process on PostgreSQL. */
export const POSTGRES_SEMI_SPACE_MIB = 8;

export function serviceNodeFlags(engine: 'pglite' | 'postgres' = 'pglite'): string[] {
  const shebang = readFileSync(BIN, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\/usr\/bin\/env -S node((?: --[a-z0-9-]+(?:=\S+)?)*)$/.exec(shebang);
  if (!m) throw new Error(`bin/yield-service.mjs: unexpected shebang ${JSON.stringify(shebang)}`);
  const flags = m[1]!.trim().split(' ').filter(Boolean);
  if (engine === 'pglite') return flags;
  return flags.map((f) =>
    f.startsWith('--max-semi-space-size=') ? `--max-semi-space-size=${POSTGRES_SEMI_SPACE_MIB}` : f,
  );
}
