/** Builds the embed app once for the embed suites when no current build exists (npm ci builds it). */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type EmbedAssets, loadEmbedAssets } from '../../src/embed/assets.ts';

const SCRIPT = fileURLToPath(new URL('../../scripts/build-embed.mjs', import.meta.url));

export function builtEmbedAssets(): EmbedAssets {
  execFileSync(process.execPath, [SCRIPT, '--if-missing'], { stdio: 'pipe' });
  const assets = loadEmbedAssets();
  if (!assets) throw new Error('the embed app did not build');
  return assets;
}
