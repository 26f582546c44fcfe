/**
 * The Deno and Bun executables of the runtime suites. They are not dependencies of the project
 * (issue #30: 195 MB that every `npm ci` installed for these two tests): the suite installs them on
 * demand, at the pinned versions below, from the npm registry (or the npm cache, offline) into
 * node_modules/.cache/sdk-runtimes, with install scripts off; the binary is taken from the
 * platform package (`@deno/<platform>`, `@oven/bun-<platform>`). A fresh `npm ci` clears the cache
 * with node_modules. A missing or broken runtime is a failure, never a skip.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The versions the suites run (raise them here; the install follows). */
export const RUNTIME_VERSIONS = { deno: '2.9.6', bun: '1.4.5' } as const;

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'sdk-runtimes');
const require = createRequire(path.join(CACHE, 'resolve-from-here.js'));

function packageDir(name: string): string | undefined {
  try {
    return path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    return undefined;
  }
}

function candidates(runtime: 'deno' | 'bun'): string[] {
  const arch = process.arch;
  const out: string[] = [];
  if (runtime === 'deno') {
    const target =
      process.platform === 'linux' ? `linux-${arch}-glibc` : `${process.platform}-${arch}`;
    const platform = packageDir(`@deno/${target}`);
    if (platform) out.push(path.join(platform, 'deno'));
  } else {
    const bunArch = arch === 'arm64' ? 'aarch64' : arch;
    for (const suffix of ['', '-baseline']) {
      const platform = packageDir(`@oven/bun-${process.platform}-${bunArch}${suffix}`);
      if (platform) out.push(path.join(platform, 'bin', 'bun'));
    }
  }
  return out.filter((file) => existsSync(file));
}

/** npm install of the pinned runtime into the cache (its platform package comes with it). */
function install(runtime: 'deno' | 'bun'): string {
  mkdirSync(CACHE, { recursive: true });
  const r = spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      CACHE,
      '--no-save',
      '--no-package-lock',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `${runtime}@${RUNTIME_VERSIONS[runtime]}`,
    ],
    { encoding: 'utf8', timeout: 300_000 },
  );
  return r.status === 0
    ? ''
    : `npm install ${runtime} failed: ${(r.stderr || String(r.error)).trim()}`;
}

export interface Runtime {
  binary: string;
  version: string;
}

function working(runtime: 'deno' | 'bun', tried: string[]): Runtime | undefined {
  for (const binary of candidates(runtime)) {
    const r = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 60_000 });
    const version = r.stdout?.trim().split('\n')[0] ?? '';
    if (r.status === 0 && version.includes(RUNTIME_VERSIONS[runtime])) return { binary, version };
    tried.push(`${binary}: ${(r.stderr || version || String(r.error)).trim().split('\n')[0]}`);
  }
  return undefined;
}

/**
 * The pinned runtime, installed first when it is not there yet; throws, naming what was tried,
 * when none works.
 */
export function findRuntime(runtime: 'deno' | 'bun'): Runtime {
  const tried: string[] = [];
  const present = working(runtime, tried);
  if (present) return present;
  tried.push(install(runtime));
  const installed = working(runtime, tried);
  if (installed) return installed;
  throw new Error(
    `No working ${runtime} ${RUNTIME_VERSIONS[runtime]} binary (tried: ${tried.filter(Boolean).join('; ') || 'none installed'}).`,
  );
}
