/**
 * The Deno and Bun executables of the runtime suites. Both come from npm as devDependencies of the
 * SDK (`deno`, `bun`, each pulling its platform's binary package), so `npm ci` installs them, offline
 * from the npm cache too, at the versions of the lockfile. Their postinstall scripts link the binary
 * into node_modules/.bin; when install scripts did not run (--ignore-scripts), the binary is taken
 * from the platform package itself. A missing or broken runtime is a failure, never a skip.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

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
  const main = packageDir(runtime);
  if (runtime === 'deno') {
    if (main) out.push(path.join(main, 'deno'));
    const target =
      process.platform === 'linux' ? `linux-${arch}-glibc` : `${process.platform}-${arch}`;
    const platform = packageDir(`@deno/${target}`);
    if (platform) out.push(path.join(platform, 'deno'));
  } else {
    if (main) out.push(path.join(main, 'bin', 'bun.exe'));
    const bunArch = arch === 'arm64' ? 'aarch64' : arch;
    for (const suffix of ['', '-baseline']) {
      const platform = packageDir(`@oven/bun-${process.platform}-${bunArch}${suffix}`);
      if (platform) out.push(path.join(platform, 'bin', 'bun'));
    }
  }
  return out.filter((file) => existsSync(file));
}

export interface Runtime {
  binary: string;
  version: string;
}

/** The first installed binary that answers `--version`; throws, naming what was tried, if none. */
export function findRuntime(runtime: 'deno' | 'bun'): Runtime {
  const tried: string[] = [];
  for (const binary of candidates(runtime)) {
    const r = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 60_000 });
    if (r.status === 0) return { binary, version: r.stdout.trim().split('\n')[0]! };
    tried.push(`${binary}: ${(r.stderr || String(r.error)).trim().split('\n')[0]}`);
  }
  throw new Error(
    `No working ${runtime} binary (tried: ${tried.join('; ') || 'none installed'}). ` +
      `It is a devDependency of packages/sdk: run npm ci.`,
  );
}
