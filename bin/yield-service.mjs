#!/usr/bin/env -S node --max-semi-space-size=2
// --max-semi-space-size=2 (MiB): V8's young generation otherwise grows to tens of MiB per
// semi-space under load; measured on bench:api (PostgreSQL) it keeps the API near 150–175 MB RSS
// instead of 330–380 MB at the same throughput. `npm start` passes it too.
// Runs the TypeScript sources through tsx's loader, so the service needs no build step.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/main.ts');
try {
  await runCli(process.argv);
} catch (err) {
  // Operational failures (a server that refuses, a migration that stops) get one clear line; the
  // stack is for programming errors, or on request with LOG_LEVEL=debug.
  const operational = err && (typeof err.code === 'string' || err.name === 'MigrationError');
  const debug = process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace';
  const text = err instanceof Error ? err.message : String(err);
  process.stderr.write(`yield-service: ${operational && !debug ? text : (err?.stack ?? text)}\n`);
  process.exit(1);
}
