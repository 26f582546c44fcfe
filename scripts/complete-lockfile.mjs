#!/usr/bin/env node
/**
 * Completes package-lock.json with the platform-specific optional packages (Biome's and anvil's
 * binaries for other operating systems) that the npm registry reachable from our build machines does
 * not serve. npm leaves an optional package out of the lock when it cannot fetch it, and `npm ci`
 * then refuses the lock as "out of sync". The entries added here carry the os/cpu/libc gates the
 * real packages declare, so npm never tries to install them on a machine they do not fit.
 *
 * Run after every `npm install` that changes a lock: `node scripts/complete-lockfile.mjs` (it
 * completes package-lock.json and tools/package-lock.json, the maintainers' tools).
 */
import { readFileSync, writeFileSync } from 'node:fs';

for (const lockfile of ['../package-lock.json', '../tools/package-lock.json']) {
  complete(new URL(lockfile, import.meta.url));
}

/** os/cpu/libc of a platform package, read from its name (e.g. cli-linux-x64-musl, anvil-win32-amd64). */
function platformOf(name) {
  const os = ['darwin', 'linux', 'win32', 'android', 'freebsd'].find((o) =>
    name.includes(`-${o}-`),
  );
  const arch = /-(x64|amd64|arm64|ia32|arm)(?:-|$)/.exec(name)?.[1];
  if (!os || !arch) return undefined;
  const gate = { os: [os], cpu: [arch === 'amd64' ? 'x64' : arch] };
  if (os === 'linux') gate.libc = [name.endsWith('-musl') ? 'musl' : 'glibc'];
  return gate;
}

function complete(file) {
  const lock = JSON.parse(readFileSync(file, 'utf8'));
  let added = 0;
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const key = `node_modules/${dep}`;
      if (lock.packages[key] || lock.packages[`${path}/node_modules/${dep}`]) continue;
      const gate = platformOf(dep);
      if (!gate) continue;
      lock.packages[key] = {
        version,
        ...(entry.dev ? { dev: true } : {}),
        optional: true,
        ...gate,
      };
      added++;
    }
  }
  lock.packages = Object.fromEntries(
    Object.entries(lock.packages).sort(([a], [b]) =>
      a === '' ? -1 : b === '' ? 1 : a.localeCompare(b),
    ),
  );
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(
    `complete-lockfile: ${file.pathname.split('/').slice(-2).join('/')}: added ${added} platform entr${added === 1 ? 'y' : 'ies'}`,
  );
}
