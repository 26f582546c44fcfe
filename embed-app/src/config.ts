/** The configuration the server inlines in the page (src/embed/page.ts is its source of truth). */
import type { EmbedPageConfig } from '../../src/embed/page.ts';
import type { EmbedProductView } from '../../src/embed/product-view.ts';

export type { EmbedPageConfig, EmbedProductView };

export function readConfig(): EmbedPageConfig {
  const el = document.getElementById('embed-config');
  if (!el?.textContent) throw new Error('the embed page has no configuration');
  return JSON.parse(el.textContent) as EmbedPageConfig;
}
