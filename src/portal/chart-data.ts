/**
 * The product page's chart data, as it travels in the page: compact and exact; and each chart's
 * change in a sentence, its text alternative (trendSentence, at the end).
 *
 * A year of the API's apy-history and fee-stats as decimal strings with their field names was
 * 16.6 KB of the page compressed. Here the same figures are integers instead: APYs in millionths
 * (the stored 6-place fractions), amounts in the asset's base units, dates as day steps from the
 * first date, TVL as differences from the day before, the cumulative fees as what each day adds
 * beyond its daily fee (nearly always 0: the cumulative figure grows by the day's fee), and the net
 * APY as its distance below the underlying APY (the fees' share), so most numbers are short or
 * repeat. Each column is one array under a short name (no
 * repeated keys). An integer beyond 2^53 − 1 (an 18-decimal asset's large amounts) travels as a
 * string, so nothing is ever rounded; static/charts.js rebuilds the API's exact decimal strings
 * with BigInt (decodeChartData below is the same decoding, for the tests and the docs).
 */
import type { SnapshotView } from '../db/snapshot-reads.ts';
import { formatUnits, toBaseUnits } from '../money/index.ts';

/** The charts' data in the API's terms: apy-history and fee-stats of one window, by column. */
export interface ChartData {
  days: number;
  from: string;
  to: string;
  asset: string;
  apy_history: {
    date: string[];
    underlying_apy: string[];
    net_apy_for_user: string[];
    /** Net APY realised over the 7 days ending at the row (issue #35); null until 7 days exist. */
    net_apy_7d: (string | null)[];
    engine_total_assets: string[];
  };
  fee_stats: {
    date: string[];
    daily_partner_fee_earned: string[];
    daily_service_fee_earned: string[];
    cumulative_partner_fee_earned: string[];
    cumulative_service_fee_earned: string[];
  };
}

/** An exact integer: a JSON number while it is safe, else its decimal string. */
type Int = number | string;

/** What the page carries (see the module comment for each column's encoding). */
export interface CompactChartData {
  days: number;
  from: string;
  to: string;
  asset: string;
  /** The asset's decimals: amounts are base units. */
  dec: number;
  apy: {
    /** First date, then each row's day step from the row before (the first step is 0). */
    d0: string | null;
    dd: number[];
    /** Underlying APY in millionths; `n`: underlying minus net APY, millionths. */
    u: Int[];
    n: Int[];
    /** Net APY realised over 7 days, millionths, as its distance below `u` like `n`; null: none yet. */
    n7: (Int | null)[];
    /** TVL in base units, as differences from the row before (the first from zero). */
    tvl: Int[];
  };
  fees: {
    d0: string | null;
    dd: number[];
    /** Daily partner and service fees earned, base units. */
    dp: Int[];
    ds: Int[];
    /**
     * Cumulative partner and service fees earned, base units: each row's growth over the row before
     * minus its daily fee (the first row's from zero).
     */
    cp: Int[];
    cs: Int[];
  };
}

const DAY_MS = 86_400_000;
const dayNumber = (date: string) => Date.parse(`${date}T00:00:00Z`) / DAY_MS;
const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

const int = (v: bigint): Int =>
  v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : `${v}`;

function steps(dates: readonly string[]): number[] {
  return dates.map((d, i) => (i === 0 ? 0 : dayNumber(d) - dayNumber(dates[i - 1]!)));
}

function differences(values: readonly bigint[]): Int[] {
  return values.map((v, i) => int(i === 0 ? v : v - values[i - 1]!));
}

/** A cumulative column as each row's growth beyond its daily part. */
function beyond(cumulative: readonly bigint[], daily: readonly bigint[]): Int[] {
  return cumulative.map((v, i) => int(v - (i === 0 ? 0n : cumulative[i - 1]!) - daily[i]!));
}

const millionths = (apy: string | null) => int(toBaseUnits(apy ?? '0', 6));

/**
 * The compact form of a window: `apy` the apy-history rows (oldest first), `fees` the fee-stats
 * rows (oldest first), as db/snapshot-reads.ts returns them.
 */
export function encodeChartData(input: {
  days: number;
  from: string;
  to: string;
  asset: string;
  decimals: number;
  apy: readonly SnapshotView[];
  fees: readonly SnapshotView[];
}): CompactChartData {
  const { apy, fees } = input;
  const dailyPartner = fees.map((r) => r.dailyPartnerFee ?? 0n);
  const dailyService = fees.map((r) => r.dailyServiceFee ?? 0n);
  return {
    days: input.days,
    from: input.from,
    to: input.to,
    asset: input.asset,
    dec: input.decimals,
    apy: {
      d0: apy[0]?.date ?? null,
      dd: steps(apy.map((r) => r.date)),
      u: apy.map((r) => millionths(r.underlyingApy)),
      n: apy.map((r) =>
        int(toBaseUnits(r.underlyingApy ?? '0', 6) - toBaseUnits(r.netApyForUser ?? '0', 6)),
      ),
      n7: apy.map((r) =>
        r.netApy7d === null
          ? null
          : int(toBaseUnits(r.underlyingApy ?? '0', 6) - toBaseUnits(r.netApy7d, 6)),
      ),
      tvl: differences(apy.map((r) => r.engineTotalAssets)),
    },
    fees: {
      d0: fees[0]?.date ?? null,
      dd: steps(fees.map((r) => r.date)),
      dp: dailyPartner.map(int),
      ds: dailyService.map(int),
      cp: beyond(
        fees.map((r) => r.cumulativePartnerFeeEarned),
        dailyPartner,
      ),
      cs: beyond(
        fees.map((r) => r.cumulativeServiceFeeEarned),
        dailyService,
      ),
    },
  };
}

function dates(d0: string | null, dd: readonly number[]): string[] {
  if (d0 === null) return [];
  let day = dayNumber(d0);
  return dd.map((step) => {
    day += step;
    return dateOf(day);
  });
}

/** Running sums of `values` plus, row by row, `daily` (the inverse of differences and beyond). */
function sums(values: readonly Int[], daily: readonly Int[] = []): bigint[] {
  let total = 0n;
  return values.map((v, i) => {
    total += BigInt(v) + BigInt(daily[i] ?? 0);
    return total;
  });
}

/** An APY in millionths as the API's 6-place fraction ("0.051234"). */
function fraction(v: bigint): string {
  const digits = (v < 0n ? -v : v).toString().padStart(7, '0');
  return `${v < 0n ? '-' : ''}${digits.slice(0, -6)}.${digits.slice(-6)}`;
}

/** Back to the API's field names and exact decimal strings (what charts.js also does). */
export function decodeChartData(c: CompactChartData): ChartData {
  const units = (v: bigint) => formatUnits(v, c.dec);
  return {
    days: c.days,
    from: c.from,
    to: c.to,
    asset: c.asset,
    apy_history: {
      date: dates(c.apy.d0, c.apy.dd),
      underlying_apy: c.apy.u.map((v) => fraction(BigInt(v))),
      net_apy_for_user: c.apy.n.map((v, i) => fraction(BigInt(c.apy.u[i]!) - BigInt(v))),
      net_apy_7d: (c.apy.n7 ?? []).map((v, i) =>
        v === null ? null : fraction(BigInt(c.apy.u[i]!) - BigInt(v)),
      ),
      engine_total_assets: sums(c.apy.tvl).map(units),
    },
    fee_stats: {
      date: dates(c.fees.d0, c.fees.dd),
      daily_partner_fee_earned: c.fees.dp.map((v) => units(BigInt(v))),
      daily_service_fee_earned: c.fees.ds.map((v) => units(BigInt(v))),
      cumulative_partner_fee_earned: sums(c.fees.cp, c.fees.dp).map(units),
      cumulative_service_fee_earned: sums(c.fees.cs, c.fees.ds).map(units),
    },
  };
}

/**
 * A chart's change over its window in one sentence, for its text alternative: "TVL rose from X to Y
 * over the last 30 days", "fell", or "stayed at X". First and last figures are compared exactly
 * (`exact`: the figure as an integer, base units or millionths; never a float); where the window
 * went lower or higher than both ends, the sentence also gives its lowest and highest figures. The
 * days are those the figures cover, first date to last, both counted.
 */
export function trendSentence<T>(o: {
  label: string;
  dates: readonly string[];
  values: readonly T[];
  exact: (v: T) => bigint;
  format: (v: T) => string;
}): string {
  const { label, values, format } = o;
  if (values.length === 0) return `${label}: no figures in this period.`;
  const last = values.length - 1;
  if (last === 0) return `${label} was ${format(values[0]!)} on ${o.dates[0]}.`;
  const n = dayNumber(o.dates[last]!) - dayNumber(o.dates[0]!) + 1;
  const over = `over the last ${n} ${n === 1 ? 'day' : 'days'}`;
  const exact = values.map(o.exact);
  const first = exact[0]!;
  const end = exact[last]!;
  let low = 0;
  let high = 0;
  exact.forEach((v, i) => {
    if (v < exact[low]!) low = i;
    if (v > exact[high]!) high = i;
  });
  // Bigints: below both ends is below the lower one (Math.min takes no bigint).
  const lowest = exact[low]!;
  const highest = exact[high]!;
  const inside = (lowest < first && lowest < end) || (highest > first && highest > end);
  const range = inside ? `, ranging from ${format(values[low]!)} to ${format(values[high]!)}` : '';
  const [from, to] = [format(values[0]!), format(values[last]!)];
  if (first === end) return `${label} stayed at ${from} ${over}${range}.`;
  const moved = end > first ? 'rose' : 'fell';
  // Shown to 2 places, a change smaller than that would read "from X to X".
  if (from === to)
    return `${label} ${moved} slightly ${over}, staying at ${from} to 2 places${range}.`;
  return `${label} ${moved} from ${from} to ${to} ${over}${range}.`;
}
