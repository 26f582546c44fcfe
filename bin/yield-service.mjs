#!/usr/bin/env -S node --max-semi-space-size=2
// --max-semi-space-size=2 (MiB): V8's young generation otherwise grows to tens of MiB per
// semi-space under load; measured on bench:api (PostgreSQL) it keeps the API near 150–175 MB RSS
// instead of 330–380 MB at the same throughput. `npm start` passes it too.
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
