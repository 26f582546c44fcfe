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
