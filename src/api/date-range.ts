/**
 * fee-stats date rules (DECISIONS): UTC dates, inclusive. Neither given: the 30 days ending today.
 * Only start_date: up to today. Only end_date: the 30 days ending then. A date that is not a real
 * YYYY-MM-DD day, or start after end, is 400 invalid_date; end − start over 365 days is 400
 * range_too_large.
 */
import { ApiError } from './errors.ts';

const DAY_MS = 86_400_000;
export const DEFAULT_SPAN_DAYS = 30;
export const MAX_SPAN_DAYS = 365;

/** Parses a real calendar day ('2026-02-30' is not one); undefined when absent. */
export function parseDay(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(raw);
  if (!m) throw new ApiError('invalid_date', `"${raw.slice(0, 40)}" is not a YYYY-MM-DD date.`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = Date.UTC(y, mo - 1, d);
  const back = new Date(t);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) {
    throw new ApiError('invalid_date', `"${raw}" is not a real calendar day.`);
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

/** The inclusive [from, to] day range of a fee-stats request. */
export function feeStatsRange(
  startRaw: string | undefined,
  endRaw: string | undefined,
  now: Date,
): { from: string; to: string } {
  const start = parseDay(startRaw);
  const end = parseDay(endRaw);
  const to = end ?? todayUtc(now);
  const from = start ?? to - (DEFAULT_SPAN_DAYS - 1) * DAY_MS;
  if (from > to) throw new ApiError('invalid_date', 'start_date is after end_date.');
  if ((to - from) / DAY_MS > MAX_SPAN_DAYS) throw new ApiError('range_too_large');
  return { from: formatDay(from), to: formatDay(to) };
}

/** The inclusive window of the last `days` UTC days ending today. */
export function trailingDays(days: number, now: Date): { from: string; to: string } {
  const to = todayUtc(now);
  return { from: formatDay(to - (days - 1) * DAY_MS), to: formatDay(to) };
}
