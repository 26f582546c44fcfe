/**
 * The portal's static files (its CSS and scripts, uPlot, htmx, SimpleWebAuthn's browser bundle):
 * read and gzip-compressed once, when the portal starts, and addressed by a hash of their content
 * (`/static/portal.css?v=<hash>`). A URL therefore names one content forever, and browsers may keep
 * it a year without asking again (`immutable`); a changed file gets a new URL with the next release.
 * A page's weight on a first visit is its HTML plus these files compressed; later visits load only
 * the HTML.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const require = createRequire(import.meta.url);
const own = (name: string) => new URL(`./static/${name}`, import.meta.url).pathname;

const FILES: Record<string, { file: () => string; type: string }> = {
  'portal.css': { file: () => own('portal.css'), type: 'text/css' },
  'portal.js': { file: () => own('portal.js'), type: 'text/javascript' },
  'webauthn.js': { file: () => own('webauthn.js'), type: 'text/javascript' },
  'charts.js': { file: () => own('charts.js'), type: 'text/javascript' },
  'uplot.js': {
    file: () => require.resolve('uplot/dist/uPlot.iife.min.js'),
    type: 'text/javascript',
  },
  'uplot.css': { file: () => require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css' },
  'htmx.min.js': {
    file: () => require.resolve('htmx.org/dist/htmx.min.js'),
    type: 'text/javascript',
  },
  'simplewebauthn.js': {
    // The package exports only its module entries; its browser bundle sits beside them.
    file: () =>
      path.join(
        path.dirname(require.resolve('@simplewebauthn/browser')),
        '../dist/bundle/index.umd.min.js',
      ),
    type: 'text/javascript',
  },
};

export type AssetName = keyof typeof FILES;

export interface StaticAsset {
  name: string;
  type: string;
  body: Buffer;
  gzipped: Buffer;
  /** The first 12 hex digits of the content's SHA-256: the URL's version. */
  hash: string;
}

let loaded: Map<string, StaticAsset> | undefined;

/** Every static file, read and compressed on first use (then kept for the process's life). */
export function staticAssets(): Map<string, StaticAsset> {
  loaded ??= new Map(
    Object.entries(FILES).map(([name, f]) => {
      const body = readFileSync(f.file());
      return [
        name,
        {
          name,
          type: f.type,
          body,
          gzipped: gzipSync(body, { level: 9 }),
          hash: createHash('sha256').update(body).digest('hex').slice(0, 12),
        },
      ];
    }),
  );
  return loaded;
}

/** The URL of a static file, versioned by its content. */
export function assetUrl(base: string, name: string): string {
  const asset = staticAssets().get(name);
  if (!asset) throw new Error(`no portal static file ${name}`);
  return `${base}/static/${name}?v=${asset.hash}`;
}
