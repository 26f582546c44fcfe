/**
 * The lean install (#30): what the root `npm ci` brings is what runs the service and its tests.
 * Read from the committed package.json and lockfiles, so a dependency added in the wrong place, or
 * one whose install script would run unreviewed, fails here rather than in a partner's first hour.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));

interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  hasInstallScript?: boolean;
}
const rootPackage = json('package.json') as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
};
const rootLock = json('package-lock.json') as { packages: Record<string, LockEntry> };
const toolsPackage = json('tools/package.json') as { dependencies: Record<string, string> };

/** Maintainers' tools and the runtimes of the SDK's suites: installed on demand, never by npm ci. */
const ON_DEMAND = [
  '@biomejs/biome',
  'typescript',
  'openapi-typescript',
  '@stoplight/spectral-core',
  '@stoplight/spectral-rulesets',
  '@redocly/cli',
  'solc',
  '@openzeppelin/contracts',
  'bun',
  'deno',
  '@scarf/scarf',
];

describe('the root install', () => {
  it('brings none of the on-demand tools, in any workspace', () => {
    const installed = Object.keys(rootLock.packages)
      .filter((p) => p.includes('node_modules/'))
      .map((p) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length));
    for (const name of ON_DEMAND) expect(installed, name).not.toContain(name);
  });

  it('pins the tools in tools/ instead, at exact versions', () => {
    for (const name of ['@biomejs/biome', 'typescript', 'solc', '@stoplight/spectral-core']) {
      expect(toolsPackage.dependencies[name], name).toMatch(/^\d+\.\d+\.\d+$/);
    }
  });

  it('runs no install script nobody reviewed: each one is decided in allowScripts', () => {
    const withScripts = Object.entries(rootLock.packages)
      .filter(([p, e]) => p.startsWith('node_modules/') && e.hasInstallScript)
      .map(([p]) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts.length).toBeGreaterThan(0); // the lock does record them
    for (const name of withScripts) {
      expect(rootPackage.allowScripts, `allowScripts decides ${name}`).toHaveProperty([name]);
    }
    // None is needed: the platform packages bring the binaries the scripts would fetch.
    expect(Object.values(rootPackage.allowScripts ?? {}).every((v) => v === false)).toBe(true);
  });

  it('keeps run-time dependencies to what the service imports', () => {
    const forTests = ['vitest', 'playwright-core', 'axe-core', 'vite', 'autocannon'];
    for (const name of forTests) expect(rootPackage.dependencies).not.toHaveProperty([name]);
  });
});
