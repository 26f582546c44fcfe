/**
 * The partner docs the service serves beside its reference: the partner guide and every page and
 * image it leads to by relative links, followed to the end, so that a link clicked in the served
 * guide answers as it does in the repository. Pages under docs/ keep their paths under /docs/; the
 * SDK's README and what it links to are served under /docs/sdk/, and the links to them are
 * rewritten to match when served (the files themselves stay right for a reader of the repository).
 * Pages are held in memory (a few dozen KB); images are read when asked for.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where a file of the repository is served, or undefined for one that is not partner-facing. */
function servedPathOf(repoPath: string): string | undefined {
  if (repoPath.startsWith('docs/') && !repoPath.startsWith('docs/maintainers/')) {
    return `/${repoPath}`;
  }
  if (repoPath.startsWith('packages/sdk/')) return `/docs/sdk/${repoPath.slice(13)}`;
  return undefined;
}

const CONTENT_TYPES: Record<string, string> = {
  '.md': 'text/markdown; charset=utf-8',
  '.png': 'image/png',
  '.ts': 'text/plain; charset=utf-8',
};

export interface ServedDoc {
  /** The path the service answers it at, e.g. /docs/partner-api.md. */
  servedPath: string;
  contentType: string;
  /** The bytes to send (pages, with their links rewritten), or a reader for an image. */
  body: () => Promise<Buffer | string>;
}

/** The relative link targets of a markdown text, with where each starts (for rewriting). */
function relativeLinks(text: string): { index: number; target: string }[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => ({ index: m.index + 2, target: m[1]! }))
    .filter(({ target }) => !target.startsWith('#') && !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/**
 * The docs reachable from `start` (a path from the repository's root), each page with its links
 * rewritten to the served paths. A link to a file that is not partner-facing or not there is left
 * as it is (test/api/partner-docs.test.ts follows every served link).
 */
export function collectPartnerDocs(start = 'docs/partner-guide.md', root = ROOT): ServedDoc[] {
  const seen = new Map<string, ServedDoc>();
  const visit = (repoPath: string) => {
    const servedPath = servedPathOf(repoPath);
    const file = path.join(root, repoPath);
    if (!servedPath || seen.has(repoPath) || !existsSync(file)) return;
    const contentType = CONTENT_TYPES[path.extname(repoPath)];
    if (!contentType) return;
    if (!repoPath.endsWith('.md')) {
      seen.set(repoPath, { servedPath, contentType, body: () => readFile(file) });
      return;
    }
    const text = readFileSync(file, 'utf8');
    // Registered before its links are followed, so that pages linking each other end.
    let served = '';
    seen.set(repoPath, { servedPath, contentType, body: async () => served });
    let from = 0;
    for (const { index, target } of relativeLinks(text)) {
      const [targetPath, fragment] = target.split('#', 2) as [string, string | undefined];
      const targetRepoPath = path.posix.normalize(
        path.posix.join(path.posix.dirname(repoPath), targetPath),
      );
      visit(targetRepoPath);
      const targetServed = servedPathOf(targetRepoPath);
      if (!targetServed || !seen.has(targetRepoPath)) continue;
      const rewritten =
        path.posix.relative(path.posix.dirname(servedPath), targetServed) +
        (fragment === undefined ? '' : `#${fragment}`);
      served += text.slice(from, index) + rewritten;
      from = index + target.length;
    }
    served += text.slice(from);
  };
  visit(start);
  return [...seen.values()];
}
