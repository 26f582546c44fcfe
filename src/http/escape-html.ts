/**
 * HTML escaping for text placed in markup or a quoted attribute: the portal's templates
 * (src/portal/html.ts) and the embed's pages use this one.
 */
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}
