/**
 * Layers that only point down (docs/maintainers/decisions.md, "Layers"). The storage, money and chain layers,
 * the workers that follow the chain and the webhooks do not reach any face of the service (the
 * partner API, the portal, the embed, the operator CLI), directly or through another file. A second
 * test builds a small tree with an upward import and shows the check naming it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { forbiddenImports, importCycles, importGraph, type LayerRule } from './helpers/layering.ts';

/**
 * The layers, bottom to top. Each may import from those below it, never from those above:
 * - below: storage, money, chain, the workers, webhooks, telemetry and the small base modules;
 * - `http/`: the kit every face shares (errors and envelope, error mapping, request ids, access
 *   log, read cache, limiter counters, the read dependencies);
 * - the faces `api/`, `portal/`, `embed/`: none imports another;
 * - the entry points, which put the faces together: `server/` (the app), `main.ts`, `cli/`.
 */
const ENTRY_POINTS = ['server/', 'main.ts', 'cli/'];
const FACES = ['api/', 'portal/', 'embed/'];
const BELOW = [
  'db/',
  'money/',
  'chain/',
  'sync/',
  'worker/',
  'webhooks/',
  'telemetry/',
  'errors.ts',
  'ids.ts',
  'sha256.ts',
  'logger.ts',
  'log-destination.ts',
  'url-secrets.ts',
  'config.ts',
  'operations/',
  'time-format.ts',
  'redis.ts',
  'redis-watchdog.ts',
  'io-deadline.ts',
];

const RULES: LayerRule[] = [
  { from: BELOW, never: ['http/', ...FACES, ...ENTRY_POINTS] },
  { from: ['http/'], never: [...FACES, ...ENTRY_POINTS] },
  ...FACES.map((face) => ({
    from: [face],
    never: [...FACES.filter((f) => f !== face), ...ENTRY_POINTS],
  })),
];

describe('layering', () => {
  const graph = importGraph(path.join(import.meta.dirname, '..', 'src'));

  it('every file of src/ is in a layer', () => {
    expect(graph.size).toBeGreaterThan(100); // the tree was read
    const layered = [...BELOW, 'http/', ...FACES, ...ENTRY_POINTS];
    const strays = [...graph.keys()].filter(
      (f) => !layered.some((p) => f === p || (p.endsWith('/') && f.startsWith(p))),
    );
    expect(strays).toEqual([]);
  });

  it('imports point down: no lower layer reaches the kit, a face or an entry point, and no face another', () => {
    expect(forbiddenImports(graph, RULES)).toEqual([]);
  });

  it('no two files of src/ import each other, directly or around a circle', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('names an upward import, direct or through another file (a deliberate failing example)', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'layering-'));
    try {
      const file = (rel: string, text: string) => {
        mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
        writeFileSync(path.join(root, rel), text);
      };
      file('api/errors.ts', 'export class ApiError extends Error {}\n');
      file(
        'db/keys.ts',
        "import { ApiError } from '../api/errors.ts';\nexport const k = ApiError;\n",
      );
      file('money/units.ts', "export { k } from '../db/keys.ts';\n");
      file('chain/read.ts', "const m = await import('../money/units.ts');\nexport default m;\n");
      file('api/route.ts', "import { k } from '../db/keys.ts';\nexport const r = k;\n");
      // A face reaching another face, and the kit reaching a face.
      file('portal/page.ts', "import { r } from '../api/route.ts';\nexport const p = r;\n");
      file('http/envelope.ts', "import type { p } from '../portal/page.ts';\nexport type E = p;\n");
      // Two files that import each other.
      file('sync/a.ts', "import { b } from './b.ts';\nexport const a = b;\n");
      file('sync/b.ts', "import { a } from './a.ts';\nexport const b = a;\n");
      const graph = importGraph(root);
      expect(forbiddenImports(graph, RULES).sort()).toEqual([
        'chain/read.ts → money/units.ts → db/keys.ts → api/errors.ts',
        'db/keys.ts → api/errors.ts',
        'http/envelope.ts → portal/page.ts',
        'money/units.ts → db/keys.ts → api/errors.ts',
        'portal/page.ts → api/route.ts',
      ]);
      expect(importCycles(graph)).toEqual([['sync/a.ts', 'sync/b.ts']]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
