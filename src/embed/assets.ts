/**
 * The embed client app's built files (embed-app/dist, written by scripts/build-embed.mjs at
 * `npm ci` and by `npm run build:embed`). Read once and kept in memory with their gzip form: the
 * bundle is small, and the page must render fast on a warm server.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const DEFAULT_EMBED_DIST = fileURLToPath(new URL('../../embed-app/dist', import.meta.url));

export interface EmbedAsset {
  body: Buffer;
  gzip: Buffer;
  contentType: string;
}

export interface EmbedAssets {
  /** `assets/<hashed name>` of the app's entry script and stylesheets, for the page. */
  entry: { script: string; styles: string[] };
  /** Files by their path under dist (`assets/index-abc.js`, `host.js`). */
  files: Map<string, EmbedAsset>;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

interface ManifestEntry {
  file: string;
  css?: string[];
  isEntry?: boolean;
}

/** Undefined when the app is not built (the page then says how to build it). */
export function loadEmbedAssets(dist = DEFAULT_EMBED_DIST): EmbedAssets | undefined {
  const manifestFile = path.join(dist, '.vite', 'manifest.json');
  if (!existsSync(manifestFile)) return undefined;
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, ManifestEntry>;
  const entry = Object.values(manifest).find((m) => m.isEntry);
  if (!entry) return undefined;
  const files = new Map<string, EmbedAsset>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, name.name);
      if (name.isDirectory()) {
        if (name.name !== '.vite') walk(full);
        continue;
      }
      const type = TYPES[path.extname(name.name)];
      if (!type) continue;
      const body = readFileSync(full);
      const rel = path.relative(dist, full).split(path.sep).join('/');
      files.set(rel, { body, gzip: gzipSync(body, { level: 9 }), contentType: type });
    }
  };
  walk(dist);
  return { entry: { script: entry.file, styles: entry.css ?? [] }, files };
}
