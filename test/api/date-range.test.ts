import { describe, expect, it } from 'vitest';
import {
  feeStatsRange,
  formatDay,
  parseDay,
  todayUtc,
  trailingDays,
} from '../../src/http/date-range.ts';
import { ApiError } from '../../src/http/errors.ts';

const NOW = new Date('2026-11-21T15:00:00Z');
const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return e instanceof ApiError ? e.code : 'other';
  }
};

describe('fee-stats date ranges', () => {
  it('neither date: the 30 days ending at the latest finished day, inclusive', () => {
    // No snapshot known: the 30 days ending yesterday (today is never finished).
    expect(feeStatsRange(undefined, undefined, NOW)).toEqual({
      from: '2026-10-22',
      to: '2026-11-20',
    });
    expect(feeStatsRange(undefined, undefined, NOW, '2026-11-20')).toEqual({
      from: '2026-10-22',
      to: '2026-11-20',
    });
    expect(feeStatsRange(undefined, undefined, NOW, '2026-11-17')).toEqual({
      from: '2026-10-19',
      to: '2026-11-17',
    });
    // A row dated today (a provisional one never counts; this guards the cap) is not finished.
    expect(feeStatsRange(undefined, undefined, NOW, '2026-11-21')).toEqual({
      from: '2026-10-22',
      to: '2026-11-20',
    });
    // Explicit dates ignore it.
    expect(feeStatsRange(undefined, '2026-11-21', NOW, '2026-11-10').to).toBe('2026-11-21');
  });
  it('only start_date: up to today', () => {
    expect(feeStatsRange('2026-11-01', undefined, NOW)).toEqual({
      from: '2026-11-01',
      to: '2026-11-21',
    });
  });
  it('only end_date: the 30 days ending then', () => {
    expect(feeStatsRange(undefined, '2026-03-30', NOW)).toEqual({
      from: '2026-03-01',
      to: '2026-03-30',
    });
  });
  it('a span of exactly 365 days passes; 366 is range_too_large', () => {
    expect(feeStatsRange('2025-01-01', '2026-01-01', NOW)).toEqual({
      from: '2025-01-01',
      to: '2026-01-01',
    });
    expect(codeOf(() => feeStatsRange('2024-12-31', '2026-01-01', NOW))).toBe('range_too_large');
    // Only start_date, far back: the span to today counts too.
    expect(codeOf(() => feeStatsRange('2020-01-01', undefined, NOW))).toBe('range_too_large');
  });
  it('a single day is a valid range', () => {
    expect(feeStatsRange('2026-05-05', '2026-05-05', NOW)).toEqual({
      from: '2026-05-05',
      to: '2026-05-05',
    });
  });
  it.each([
    '2026-02-30',
    '2026-13-01',
    '2026-1-01',
    '26-01-01',
    '2026-01-01T00:00:00Z',
    'yesterday',
    '',
    '0000-01-01', // no year 0 in PostgreSQL's calendar (its query failed: a 500)
  ])('rejects %j as invalid_date', (raw) => {
    expect(codeOf(() => parseDay(raw))).toBe('invalid_date');
  });
  it('accepts the years 0001 to 0099 (Date.UTC reads them as 1900 to 1999)', () => {
    expect(parseDay('0001-01-01')).toBe(-62135596800000);
    expect(new Date(parseDay('0050-06-01')!).toISOString()).toBe('0050-06-01T00:00:00.000Z');
    expect(new Date(parseDay('9999-12-31')!).toISOString()).toBe('9999-12-31T00:00:00.000Z');
  });
  it('accepts leap days only in leap years', () => {
    expect(codeOf(() => parseDay('2024-02-29'))).toBe('ok');
    expect(codeOf(() => parseDay('2025-02-29'))).toBe('invalid_date');
  });
  it('start after end is invalid_date', () => {
    expect(codeOf(() => feeStatsRange('2026-05-06', '2026-05-05', NOW))).toBe('invalid_date');
  });
  it('trailing windows end at the latest finished day, never today', () => {
    expect(trailingDays(7, NOW)).toEqual({ from: '2026-11-14', to: '2026-11-20' });
    expect(trailingDays(7, NOW, '2026-11-20')).toEqual({ from: '2026-11-14', to: '2026-11-20' });
    expect(trailingDays(7, NOW, '2026-11-18')).toEqual({ from: '2026-11-12', to: '2026-11-18' });
    expect(trailingDays(180, NOW, '2026-11-21')).toEqual({ from: '2026-05-25', to: '2026-11-20' });
  });
});

describe('todayUtc and formatDay', () => {
  it('truncates to 00:00 UTC exactly, before and after 1970, and formats days', () => {
    for (const iso of [
      '2026-06-30T00:00:00.000Z',
      '2026-06-30T23:59:59.999Z',
      '2024-02-29T12:00:00.000Z',
      '1969-12-31T23:59:59.999Z',
      '1960-01-01T00:00:00.001Z',
    ]) {
      const day = iso.slice(0, 10);
      expect(todayUtc(new Date(iso)), iso).toBe(Date.parse(`${day}T00:00:00Z`));
      expect(formatDay(todayUtc(new Date(iso))), iso).toBe(day);
      expect(formatDay(todayUtc(new Date(iso))), `${iso} again`).toBe(day);
    }
  });
});
