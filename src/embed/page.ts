/**
 * The embed's HTML page: the built app's script and styles, and the configuration the app starts
 * from inlined as JSON (so the first render needs no request of its own). The JSON sits in a
 * non-executed `<script type="application/json">`, with `<` escaped so no value can close it.
 */
import { escapeHtml } from '../http/escape-html.ts';
import { ICON } from '../http/icon.ts';
import type { EmbedProductView } from './product-view.ts';

export type Theme = 'light' | 'dark' | 'auto';

export interface EmbedPageConfig {
  embed_id: string;
  slug: string;
  /** Base of the embed's JSON routes, relative to the page's origin. */
  api_base: string;
  product: EmbedProductView;
  theme: Theme;
  /** `#rrggbb`, or null for the default accent. */
  accent: string | null;
  /** Use the host page's wallet through the host helper's relay. */
  bridge: boolean;
  /** The parent origin events and bridge requests go to (one of the allowed ones), or null. */
  host_origin: string | null;
}

const jsonForScript = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

export function renderEmbedPage(
  config: EmbedPageConfig,
  assets: { script: string; styles: string[] },
  assetBase: string,
): string {
  const title = `${config.product.display_name} · ${config.product.partner}`;
  const styles = assets.styles
    .map((s) => `<link rel="stylesheet" href="${assetBase}/${escapeHtml(s)}">`)
    .join('');
  return `<!doctype html>
<html lang="en" data-theme="${config.theme}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${ICON}">
${styles}
<script id="embed-config" type="application/json">${jsonForScript(config)}</script>
<script type="module" src="${assetBase}/${escapeHtml(assets.script)}"></script>
</head>
<body>
<main id="app" aria-live="polite"><p class="loading">Loading ${escapeHtml(config.product.display_name)}…</p></main>
</body>
</html>
`;
}

/** A theme and accent from query parameters; anything unexpected falls back to the default. */
export function parseTheme(raw: unknown): Theme {
  return raw === 'light' || raw === 'dark' || raw === 'auto' ? raw : 'auto';
}

export function parseAccent(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const hex = raw.replace(/^#/, '');
  if (/^[0-9a-fA-F]{6}$/.test(hex)) return `#${hex.toLowerCase()}`;
  if (/^[0-9a-fA-F]{3}$/.test(hex)) {
    return `#${[...hex.toLowerCase()].map((c) => c + c).join('')}`;
  }
  return null;
}
