/**
 * PostgreSQL's COPY text format: one line per row, columns separated by tabs, `\N` for NULL, and
 * backslash, tab, newline and carriage return escaped inside values. Everything else is literal, so
 * a JSON payload goes through byte for byte.
 */
export type CopyValue = string | number | bigint | null;

const SPECIAL = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

export function copyField(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return value.toString();
  // Most values (ids, hashes, compact JSON) hold none of the four; test before replacing.
  return SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c] as string) : value;
}

/** Rows (each the columns in COPY's column order) as COPY text, ending with a newline. */
export function copyText(rows: Iterable<readonly CopyValue[]>): string {
  let out = '';
  for (const row of rows) {
    for (let i = 0; i < row.length; i++) {
      if (i > 0) out += '\t';
      out += copyField(row[i] as CopyValue);
    }
    out += '\n';
  }
  return out;
}

const UNESCAPES: Record<string, string> = { '\\\\': '\\', '\\t': '\t', '\\n': '\n', '\\r': '\r' };

/** The inverse of copyField for the values it writes (`\N` reads back as null). */
export function unescapeCopyField(field: string): string | null {
  if (field === '\\N') return null;
  return field.includes('\\') ? field.replace(/\\[\\tnr]/g, (s) => UNESCAPES[s] as string) : field;
}
