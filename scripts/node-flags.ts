/**
 * The Node flags the service runs with, written once in the bin's shebang
 * (`#!/usr/bin/env -S node <flags>`, bin/yield-service.mjs says why each). `npm start` and the
 * start:* scripts repeat them (test/node-flags.test.ts keeps them equal), and the benchmarks start
 * the service with exactly these, so what they measure is what a partner runs.
 */
import { readFileSync } from 'node:fs';

const BIN = new URL('../bin/yield-service.mjs', import.meta.url);

export function serviceNodeFlags(): string[] {
  const shebang = readFileSync(BIN, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\/usr\/bin\/env -S node((?: --[a-z0-9-]+(?:=\S+)?)*)$/.exec(shebang);
  if (!m) throw new Error(`bin/yield-service.mjs: unexpected shebang ${JSON.stringify(shebang)}`);
  return m[1]!.trim().split(' ').filter(Boolean);
}
