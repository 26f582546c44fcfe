#!/usr/bin/env node
/**
 * `npm run sdk:pack`: builds the SDK and packs it into artifacts/ as
 * partner-yield-sdk-<version>.tgz, the file a partner installs today
 * (`npm install ./partner-yield-sdk-<version>.tgz`) and the one `npm publish` takes the day it is
 * published (packages/sdk/README.md, "Installing"). Prints the file, its size and its SHA-256.
 * CI runs it after the tests, so every green run leaves the tarball of that commit.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = path.join(root, 'artifacts');
mkdirSync(out, { recursive: true });
// The build first, its report on this terminal; then the pack alone, whose stdout is its JSON.
execFileSync('npm', ['run', 'build', '--workspace', '@partner-yield/sdk'], {
  cwd: root,
  stdio: 'inherit',
});
const packed = JSON.parse(
  execFileSync(
    'npm',
    [
      'pack',
      '--json',
      '--ignore-scripts',
      '--workspace',
      '@partner-yield/sdk',
      '--pack-destination',
      out,
    ],
    { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  ),
);
const file = path.join(out, packed[0].filename);
const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
const kb = (statSync(file).size / 1024).toFixed(1);
console.log(
  `SDK ${packed[0].version} packed: ${path.relative(root, file)} (${kb} KB, ${packed[0].entryCount} files)`,
);
console.log(`sha256 ${sha256}`);
console.log(`install: npm install ./${path.relative(root, file)}`);
