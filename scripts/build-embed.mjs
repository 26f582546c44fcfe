#!/usr/bin/env node
/**
 * Builds the embed client app (embed-app/) into embed-app/dist: the app (Preact + viem, one
 * content-hashed module with its stylesheet, and a manifest the server reads) and the host helper
 * (host.js, a classic script defining the global `YieldEmbed`). Prints each file's size, raw and
 * gzip-compressed, and the app's compressed total against the 80 KB budget (fails above it).
 *
 * Runs at `npm ci` (the package's `prepare`) and by `npm run build:embed`; `--if-missing` skips the
 * work when a build newer than every source file is there (the start and test commands use it).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('../embed-app/', import.meta.url));
const dist = path.join(root, 'dist');
const BUDGET_BYTES = 80 * 1024;

function newestSource(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(full) : statSync(full).mtimeMs);
  }
  return newest;
}

const manifest = path.join(dist, '.vite', 'manifest.json');
if (
  process.argv.includes('--if-missing') &&
  existsSync(manifest) &&
  existsSync(path.join(dist, 'host.js'))
) {
  const built = statSync(manifest).mtimeMs;
  const sources = Math.max(
    newestSource(path.join(root, 'src')),
    statSync(fileURLToPath(import.meta.url)).mtimeMs,
  );
  if (built >= sources) process.exit(0);
}

const { build } = await import('vite');
const common = {
  root,
  configFile: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat' } },
};

await build({
  ...common,
  base: '/embed/',
  build: {
    outDir: dist,
    emptyOutDir: true,
    manifest: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: false,
    rolldownOptions: { input: path.join(root, 'src/main.tsx') },
  },
});

await build({
  ...common,
  build: {
    outDir: dist,
    emptyOutDir: false,
    target: 'es2020',
    lib: {
      entry: path.join(root, 'src/host-global.ts'),
      formats: ['iife'],
      name: 'YieldEmbedHost',
      fileName: () => 'host.js',
    },
  },
});

const rows = [];
let appGzip = 0;
const walk = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== '.vite') walk(full);
      continue;
    }
    const body = readFileSync(full);
    const gz = gzipSync(body, { level: 9 }).length;
    const rel = path.relative(dist, full);
    if (rel.startsWith('assets')) appGzip += gz;
    rows.push(
      `  ${rel.padEnd(36)} ${String(body.length).padStart(8)} B  ${String(gz).padStart(7)} B gzip`,
    );
  }
};
walk(dist);
console.log(`embed app built in embed-app/dist:\n${rows.join('\n')}`);
console.log(
  `embed bundle: ${(appGzip / 1024).toFixed(1)} KB gzip of ${BUDGET_BYTES / 1024} KB budget`,
);
if (appGzip > BUDGET_BYTES) {
  console.error('embed bundle over its budget');
  process.exit(1);
}
