/**
 * Day windows of apy-history and fee-stats. UTC dates, inclusive.
 *
 * Trailing windows (apy-history's `days`, fee-stats without dates) end at the LATEST FINISHED DAY:
 * the newest day with a final snapshot, never after yesterday. Today has no snapshot until it is
 * over, so a window that included it was one row short (issue #14); ending at the newest finished
 * day also keeps the window whole in the minutes after midnight before the day's row is written,
 * and lines it up with latest_metrics.as_of_date. `days=N` thus gives N rows whenever N days of
 * history exist.
 *
 * fee-stats with dates (DECISIONS): only start_date: up to today. Only end_date: the 30 days
 * ending then. A date that is not a real YYYY-MM-DD day, or start after end, is 400 invalid_date;
 * end − start over 365 days is 400 range_too_large.
 */
import { utcDayMs } from '../time-format.ts';
import { ApiError } from './errors.ts';

const DAY_MS = 86_400_000;
export const DEFAULT_SPAN_DAYS = 30;
export const MAX_SPAN_DAYS = 365;

/** Parses a real calendar day ('2026-02-30' is not one); undefined when absent. */
export function parseDay(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(raw);
  if (!m) throw new ApiError('invalid_date', `"${raw.slice(0, 40)}" is not a YYYY-MM-DD date.`);
  const t = utcDayMs(Number(m[1]), Number(m[2]), Number(m[3]));
  if (t === undefined) {
    throw new ApiError(
      'invalid_date',
      `"${raw}" is not a real calendar day (years 0001 to 9999, no year 0000).`,
    );
  }
  return t;
}

// Requests name a handful of days (today and a few window starts): formatting them once each
// keeps a Date and an ISO string per request off the hot path.
const formatted = new Map<number, string>();
export function formatDay(t: number): string {
  let s = formatted.get(t);
  if (s === undefined) {
    s = new Date(t).toISOString().slice(0, 10);
    if (formatted.size >= 4096) formatted.clear();
    formatted.set(t, s);
  }
  return s;
}

/** 00:00 UTC of now's day (UTC days are whole multiples of 86,400,000 ms of epoch time). */
export function todayUtc(now: Date): number {
  const t = now.getTime();
  return t - (((t % DAY_MS) + DAY_MS) % DAY_MS);
}

/**
 * The last day a trailing window may end on: the newest finished day (`latestFinished`, the
 * newest final snapshot's date, when there is one), never after yesterday.
 */
export function lastFinishedDay(latestFinished: string | undefined, now: Date): number {
  const yesterday = todayUtc(now) - DAY_MS;
  if (latestFinished === undefined) return yesterday;
  return Math.min(Date.parse(`${latestFinished}T00:00:00Z`), yesterday);
}

/**
 * The inclusive [from, to] day range of a fee-stats request. `latestFinished`: the date of the
 * product's newest final snapshot (the default window ends there).
 */
export function feeStatsRange(
  startRaw: string | undefined,
  endRaw: string | undefined,
  now: Date,
  latestFinished?: string,
): { from: string; to: string } {
  const start = parseDay(startRaw);
  const end = parseDay(endRaw);
  const to = end ?? (start === undefined ? lastFinishedDay(latestFinished, now) : todayUtc(now));
  const from = start ?? to - (DEFAULT_SPAN_DAYS - 1) * DAY_MS;
  if (from > to) throw new ApiError('invalid_date', 'start_date is after end_date.');
  if ((to - from) / DAY_MS > MAX_SPAN_DAYS) throw new ApiError('range_too_large');
  return { from: formatDay(from), to: formatDay(to) };
}

/** The inclusive window of `days` UTC days ending at the latest finished day. */
export function trailingDays(
  days: number,
  now: Date,
  latestFinished?: string,
): { from: string; to: string } {
  const to = lastFinishedDay(latestFinished, now);
  return { from: formatDay(to - (days - 1) * DAY_MS), to: formatDay(to) };
}
