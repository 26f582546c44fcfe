#!/usr/bin/env -S node --max-semi-space-size=2 --heap-growing-percent=30 --no-liftoff
// The service's Node flags (`npm start` passes the same; the start:* scripts, for processes sharing
// PostgreSQL, the same with an 8 MiB semi-space: scripts/node-flags.ts, test/node-flags.test.ts).
// Each was measured on bench:api (docs/maintainers/decisions.md, "Node flags"):
// --max-semi-space-size=2 (MiB): V8's young generation otherwise grows to tens of MiB per
//   semi-space under load (330–380 MB RSS on PostgreSQL instead of 150–175 MB, same throughput).
// --heap-growing-percent=30: after each full collection the old generation may grow by 30 % of what
//   survived before the next one, not V8's default up to 4×: PGlite peak 444 → 325 MB, same CPU.
// --no-liftoff: WebAssembly (the embedded PGlite) is compiled once by the optimising compiler instead
//   of a baseline tier first and then again: ~30 MB less memory, same query speed, ~1 s longer start.
// Runs the TypeScript sources through tsx's loader, so the service needs no build step.
import { register } from 'tsx/esm/api';

register();
// A Node parent may give us an IPC channel (the test suites do, so `start` can follow its parent's
// death: src/cli/main.ts). It must never keep a one-shot command alive.
process.channel?.unref();
const { runCli } = await import('../src/cli/main.ts');
// Failures are written by runCli (one line for operational ones); a long-running command (start,
// chain) answers 0 once started and the process lives on.
const code = await runCli(process.argv.slice(2));
if (code !== 0) process.exit(code);
