/**
 * Where tests put their scratch files: the PGlite data directories of db.ts (`freshDatabase`,
 * `scratchDir`). A PGlite data directory is ~40 MB in ~1,100 files; on this machine's disk, copying and
 * removing one cost 1–3 s under load against ~0.2 s on tmpfs. So: TEST_SCRATCH_DIR if set, else
 * /dev/shm when it is a writable directory with at least 2 GB free (Linux; containers often give it
 * only 64 MB), else the OS temporary directory. Only speed depends on the choice.
 * (Pointing TMPDIR of the whole run there was measured too: no gain on the CLI tests, so not done.)
 */
import { accessSync, constants, statfsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';

const SHM = '/dev/shm';
const SHM_MIN_FREE_BYTES = 2 * 1024 ** 3;

let root: string | undefined;

export function scratchRoot(): string {
  root ??= process.env.TEST_SCRATCH_DIR || (usable(SHM) ? SHM : tmpdir());
  return root;
}

function usable(dir: string): boolean {
  try {
    if (!statSync(dir).isDirectory()) return false;
    accessSync(dir, constants.W_OK);
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize >= SHM_MIN_FREE_BYTES;
  } catch {
    return false; // not there, not writable, or no statfs: the OS temporary directory
  }
}
