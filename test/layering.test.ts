/**
 * Layers that only point down (docs/decisions.md, "Layers"). The storage, money and chain layers,
 * the workers that follow the chain and the webhooks do not reach any face of the service (the
 * partner API, the portal, the embed, the operator CLI), directly or through another file. A second
 * test builds a small tree with an upward import and shows the check naming it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { forbiddenImports, importGraph, type LayerRule } from './helpers/layering.ts';

const FACES = ['api/', 'portal/', 'embed/', 'cli/'];

/** What may not reach a face: everything below them. */
const RULES: LayerRule[] = [
  {
    from: [
      'db/',
      'money/',
      'chain/',
      'sync/',
      'worker/',
      'webhooks/',
      'telemetry/',
      'ids.ts',
      'logger.ts',
      'url-secrets.ts',
      'config.ts',
    ],
    never: FACES,
  },
];

describe('layering', () => {
  it('no lower layer of src/ reaches the API, the portal, the embed or the CLI', () => {
    const graph = importGraph(path.join(import.meta.dirname, '..', 'src'));
    expect(graph.size).toBeGreaterThan(100); // the tree was read
    expect(forbiddenImports(graph, RULES)).toEqual([]);
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
      const found = forbiddenImports(importGraph(root), RULES);
      expect(found.sort()).toEqual([
        'chain/read.ts → money/units.ts → db/keys.ts → api/errors.ts',
        'db/keys.ts → api/errors.ts',
        'money/units.ts → db/keys.ts → api/errors.ts',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
