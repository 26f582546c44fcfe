#!/usr/bin/env node
/**
 * The maintainers' tools, installed on demand: Biome, TypeScript, the OpenAPI linters and
 * openapi-typescript, solc and the OpenZeppelin sources. None of them runs the service or is needed
 * by a partner who tries it, so the root `npm ci` does not install them (issue #30: they were 180 MB
 * of every install). They live in tools/ with their own package.json and lockfile (exact versions,
 * integrity-checked), and the first command that needs them runs `npm ci` there, with install
 * scripts off; later commands find them installed. A changed tools/package-lock.json reinstalls.
 *
 *   node scripts/tools.mjs <bin> [args…]   runs a tool's executable (npm run lint, npm run typecheck)
 *   import { ensureTools, toolRequire } from './tools.mjs'   from scripts and tests
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const TOOLS_DIR = fileURLToPath(new URL('../tools/', import.meta.url));
const MODULES = path.join(TOOLS_DIR, 'node_modules');
const STAMP = path.join(MODULES, '.installed-lock-sha256');

function lockHash() {
  return createHash('sha256')
    .update(readFileSync(path.join(TOOLS_DIR, 'package-lock.json')))
    .digest('hex');
}

function installed() {
  return existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === lockHash();
}

/** Installs tools/ from its lockfile unless that exact lockfile is installed already. */
export function ensureTools() {
  if (installed()) return;
  process.stderr.write("Installing the maintainers' tools into tools/node_modules (first use)…\n");
  const r = spawnSync(
    'npm',
    ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
    { cwd: TOOLS_DIR, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600_000 },
  );
  if (r.status !== 0) {
    throw new Error(
      `npm ci in tools/ failed (${r.error ? String(r.error) : `exit ${r.status}`}); the npm registry or its cache must be reachable`,
    );
  }
  writeFileSync(STAMP, `${lockHash()}\n`);
}

/** `require` that resolves from tools/ (after installing it when needed). */
export function toolRequire() {
  ensureTools();
  return createRequire(path.join(TOOLS_DIR, 'package.json'));
}

/** Dynamic `import()` of a tool's package, resolved from tools/ (tools/load.mjs). */
export async function importTool(specifier) {
  ensureTools();
  const { load } = await import(pathToFileURL(path.join(TOOLS_DIR, 'load.mjs')).href);
  return load(specifier);
}

/** The path of a tool's executable in tools/node_modules/.bin. */
export function toolBin(name) {
  ensureTools();
  return path.join(MODULES, '.bin', name);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [bin, ...args] = process.argv.slice(2);
  if (!bin) {
    ensureTools();
    process.exit(0);
  }
  const r = spawnSync(toolBin(bin), args, { stdio: 'inherit' });
  if (r.error) throw r.error;
  process.exit(r.status ?? 1);
}
