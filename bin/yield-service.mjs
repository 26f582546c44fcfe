#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so the service needs no build step.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli/main.ts');
try {
  await runCli(process.argv);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
}
