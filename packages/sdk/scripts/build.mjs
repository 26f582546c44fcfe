#!/usr/bin/env node
/**
 * Builds the package with the TypeScript compiler alone: one checked compilation emits ES modules
 * and declarations into dist/esm; the same sources are then transpiled file by file to CommonJS
 * into dist/cjs (marked by its own package.json) beside a copy of the declarations, so both
 * `import` and `require` get code and types without type-checking twice. Then prints the size a
 * bundler would ship of each entry point, minified and gzip-compressed (esbuild measures; it is
 * not part of the build).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { toolRequire } from '../../../scripts/tools.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(root, 'dist');
// TypeScript is a maintainers' tool, installed on demand in tools/ (scripts/tools.mjs).
const require = toolRequire();
const tsc = require.resolve('typescript/bin/tsc');
const run = (args) =>
  execFileSync(process.execPath, [tsc, ...args], { cwd: root, stdio: 'inherit' });

rmSync(dist, { recursive: true, force: true });
run(['-p', 'tsconfig.build.json']);
const ts = require('typescript');
const src = path.join(root, 'src');
for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.ts')) continue;
  const { outputText } = ts.transpileModule(readFileSync(path.join(src, file), 'utf8'), {
    fileName: file,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      rewriteRelativeImportExtensions: true,
      verbatimModuleSyntax: false,
    },
  });
  const out = path.join(dist, 'cjs', file.replace(/\.ts$/, '.js'));
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, outputText);
}
// The declarations describe both module systems alike; dist/cjs/package.json makes them CommonJS.
cpSync(path.join(dist, 'esm'), path.join(dist, 'cjs'), {
  recursive: true,
  filter: (from) => !from.endsWith('.js'),
});
writeFileSync(path.join(dist, 'cjs', 'package.json'), '{ "type": "commonjs" }\n');

/** Minified, then gzipped and brotli-compressed bytes of an entry point bundled for a browser, viem left out. */
export async function sizeOf(entry) {
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: [path.join(dist, 'esm', entry)],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    external: ['viem', 'viem/*'],
    write: false,
    logLevel: 'silent',
  });
  const code = out.outputFiles[0].contents;
  return {
    minified: code.length,
    gzipped: gzipSync(code, { level: 9 }).length,
    brotli: brotliCompressSync(code, {
      params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY },
    }).length,
  };
}

const kb = (n) => `${(n / 1024).toFixed(2)} KB`;
for (const [name, entry] of [
  ['client + webhooks (.)', 'index.js'],
  ['engine helpers (./engine, viem external)', 'engine/index.js'],
]) {
  try {
    const s = await sizeOf(entry);
    console.log(
      `size ${name}: ${kb(s.minified)} minified, ${kb(s.gzipped)} minified+gzipped, ${kb(s.brotli)} minified+brotli`,
    );
  } catch (err) {
    if (err?.code !== 'ENOENT' && !/Could not resolve/.test(String(err?.message))) throw err;
    // The build itself is done; say why this size is missing rather than print nothing.
    console.log(`size ${name}: not measured (${String(err.message).split('\n')[0]})`);
  }
}
