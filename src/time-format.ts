/**
 * The one way a time is written for people, in the portal, its audit log and the operator's audit
 * rows: "2026-11-26 16:09 UTC" (minutes, UTC, no locale). Machine-readable copies stay ISO 8601.
 */
export function formatUtc(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 } as const;

/** A duration in its largest whole unit: `0`, `30 m`, `24 h`, `7 d`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  const unit = (['d', 'h', 'm', 's'] as const).find((u) => ms % UNIT_MS[u] === 0) ?? 's';
  return `${ms / UNIT_MS[unit]} ${unit}`;
}

/**
 * Epoch ms of 00:00 UTC of a day of the proleptic Gregorian calendar, years 0001–9999 (the range
 * of a four-digit year PostgreSQL accepts; it has no year 0), or undefined when it is not a real
 * day ('2026-02-30'). Date.UTC reads years 0–99 as 1900–1999; setUTCFullYear does not.
 */
export function utcDayMs(year: number, month: number, day: number): number | undefined {
  if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? date.getTime() : undefined;
}

/**
 * `YYYY-MM-DDTHH:MM:SS[.fraction]Z`: ISO 8601 in UTC, with `Z` (no offsets, no lowercase `t`/`z`,
 * no leap second), on a real calendar day (utcDayMs). Fractions finer than a millisecond are cut.
 */
const UTC_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z$/;

export function parseUtcDateTime(value: string): Date | undefined {
  const m = UTC_DATE_TIME.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const dayMs = utcDayMs(year, month, day);
  if (dayMs === undefined) return undefined;
  const fractionMs = Math.floor(Number(`0${m[7] ?? ''}`) * 1000);
  return new Date(dayMs + ((hour * 60 + minute) * 60 + second) * 1000 + fractionMs);
}
