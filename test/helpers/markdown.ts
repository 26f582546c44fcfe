/** Markdown as GitHub reads it, for the tests of the docs' links. */

/**
 * The anchors of a markdown text's headings as GitHub makes them: lower case, punctuation dropped,
 * each space a hyphen, and -1, -2… after a repeated one. Headings inside code fences are not ones.
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? undefined : /^#{1,6} +(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (!heading) continue;
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}
