/**
 * One owner at a time for an embedded (PGlite) data directory. PGlite runs PostgreSQL inside the
 * process, without the postmaster that refuses a second server on the same directory, so two
 * processes (or two opens in one process) would both write the files and corrupt them.
 *
 * The lock is a file beside the directory (`<dir>.lock`), created exclusively, holding the owner's
 * pid and host. A lock whose process is gone (a crash, a kill -9, a container restarted with the
 * same pid) is stale and taken over; a live owner is refused with an error that names it. (Two
 * processes that find the same stale lock at the same instant could both take it over; the lock is
 * for the real mistakes: a second start, or an operator command while the service runs.)
 */

import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { BaseError, type BaseErrorOptions } from '../errors.ts';

/** The embedded database is open elsewhere. `code` lets the CLI print it as one line. */
export class DatabaseLockedError extends BaseError<'database_locked'> {
  override name = 'DatabaseLockedError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('database_locked', message, options);
  }
}

interface Owner {
  pid: number;
  host: string;
  since: string;
}

/** Directories this process holds (by absolute path): its own pid in a lock file is not enough. */
const held = new Set<string>();

const lockPath = (dataDir: string) => `${path.resolve(dataDir)}.lock`;

function readOwner(file: string): Owner | null {
  try {
    const o = JSON.parse(readFileSync(file, 'utf8')) as Partial<Owner>;
    return typeof o.pid === 'number' && typeof o.host === 'string'
      ? { pid: o.pid, host: o.host, since: String(o.since ?? '') }
      : null;
  } catch {
    return null; // unreadable or half-written: treated as stale below
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Is the recorded owner a running process other than a previous life of this one? */
function ownerIsLive(owner: Owner, dir: string): boolean {
  if (owner.host !== hostname()) return true; // another machine on a shared volume: cannot tell
  if (owner.pid === process.pid) return held.has(dir);
  return alive(owner.pid);
}

/** Takes the lock of `dataDir`, or throws DatabaseLockedError naming its owner. */
export function lockDataDir(dataDir: string): () => void {
  const dir = path.resolve(dataDir);
  const file = lockPath(dir);
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = readOwner(file);
      if (owner && ownerIsLive(owner, dir)) {
        throw new DatabaseLockedError(
          `the embedded database ${dir} is in use by process ${owner.pid} on ${owner.host}` +
            `${owner.since ? ` (since ${owner.since})` : ''}: stop that process first, or set ` +
            `DATABASE_URL to use PostgreSQL. If no such process runs, delete ${file}.`,
        );
      }
      rmSync(file, { force: true }); // stale: its owner is gone
      continue;
    }
    try {
      const owner: Owner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
      writeSync(fd, JSON.stringify(owner));
    } finally {
      closeSync(fd);
    }
    held.add(dir);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held.delete(dir);
      // Only our own lock: never remove one another process took after a stale takeover.
      const owner = readOwner(file);
      if (owner?.pid === process.pid && owner.host === hostname()) rmSync(file, { force: true });
    };
  }
  throw new DatabaseLockedError(`could not take the lock ${file}: it keeps reappearing`);
}
