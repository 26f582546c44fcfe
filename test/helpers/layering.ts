/**
 * The import graph of a source tree, and the imports that break a layering rule (Ponder's
 * layering test, as docs/maintainers/decisions.md "Layers" describes). Static `import … from '…'`,
 * `export … from '…'` and `import('…')` with a relative specifier are followed; packages are not.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Files under `root` (a directory), relative to it, with their relative imports resolved. */
export function importGraph(root: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) {
        const text = readFileSync(full, 'utf8');
        const specs = [
          ...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]/g),
          ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g),
        ].map((m) => m[1]!);
        graph.set(
          path.relative(root, full),
          specs.map((s) => path.relative(root, path.resolve(path.dirname(full), s))),
        );
      }
    }
  };
  walk(root);
  return graph;
}

export interface LayerRule {
  /** Files this rule is about (relative paths; a folder prefix such as `db/`, or a file). */
  from: readonly string[];
  /** What those files must not reach, directly or through other files. */
  never: readonly string[];
}

const under = (file: string, prefixes: readonly string[]) =>
  prefixes.some((p) => file === p || file.startsWith(p.endsWith('/') ? p : `${p}/`));

/**
 * Every path from a rule's files to a forbidden file, as `a → b → … → forbidden` (the shortest
 * chain found from each starting file).
 */
export function forbiddenImports(
  graph: Map<string, string[]>,
  rules: readonly LayerRule[],
): string[] {
  const found: string[] = [];
  for (const rule of rules) {
    for (const start of graph.keys()) {
      if (!under(start, rule.from)) continue;
      // Breadth-first: the first forbidden file reached, with the chain that reaches it.
      const seen = new Map<string, string | null>([[start, null]]);
      const queue = [start];
      while (queue.length > 0) {
        const file = queue.shift()!;
        if (file !== start && under(file, rule.never)) {
          const chain = [file];
          for (let f = seen.get(file); f; f = seen.get(f)) chain.unshift(f);
          found.push(chain.join(' → '));
          break;
        }
        for (const next of graph.get(file) ?? []) {
          if (!seen.has(next)) {
            seen.set(next, file);
            queue.push(next);
          }
        }
      }
    }
  }
  return found;
}

/**
 * The import cycles of a graph: each strongly connected group of two or more files (Tarjan's
 * algorithm), its files sorted, the groups sorted.
 */
export function importCycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let next = 0;
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const to of graph.get(file) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file)!, index.get(to)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      let f: string;
      do {
        f = stack.pop()!;
        onStack.delete(f);
        group.push(f);
      } while (f !== file);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return groups.sort((a, b) => a[0]!.localeCompare(b[0]!));
}
