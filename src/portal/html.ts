/**
 * HTML by tagged template: every interpolated value is escaped unless it is already `Html` (made by
 * this tag or `raw`). Arrays are joined, null/undefined/false render nothing. Typed, no template
 * files, no engine: the pages are small and this keeps escaping the default.
 */
import { escapeHtml } from '../http/escape-html.ts';
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = Html | string | number | bigint | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup that is trusted as is (constants only, never input). */
export const raw = (markup: string) => new Html(markup);
