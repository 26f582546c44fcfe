/**
 * The product page's compact chart data (src/portal/chart-data.ts) decodes to exactly the API's
 * decimal strings, including amounts beyond 2^53 base units (an 18-decimal asset), negative values
 * and gaps between days; and the browser's decoder (static/charts.js) agrees with the server's.
 */
import { readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { SnapshotView } from '../../src/db/snapshot-reads.ts';
import { formatUnits, toBaseUnits } from '../../src/money/index.ts';
import { decodeChartData, encodeChartData, trendSentence } from '../../src/portal/chart-data.ts';
import { money, percent } from '../../src/portal/format.ts';

function row(
  date: string,
  tvl: bigint,
  apy: string,
  fee: bigint,
  cumulative: bigint,
): SnapshotView {
  return {
    date,
    engineTotalAssets: tvl,
    underlyingApy: apy,
    netApyForUser: apy.startsWith('-') ? apy : `0.${apy.slice(2, 4)}0000`,
    dailyYieldAssets: fee * 25n,
    dailyPartnerFee: fee,
    dailyServiceFee: fee / 2n,
    cumulativePartnerFeeEarned: cumulative,
    cumulativeServiceFeeEarned: cumulative / 2n,
    cumulativePartnerFeeMinted: cumulative,
    cumulativeServiceFeeMinted: cumulative / 2n,
    estimatedUnderlyingApy: null,
    estimatedNetApy: null,
    netApy7d: date === '2026-03-02' ? '0.049871' : null,
    netApy30d: null,
    underlyingApy7d: null,
    underlyingApy30d: null,
  };
}

const E18 = 10n ** 18n;
const rows = [
  row('2026-02-27', 1_250_000n * E18 + 1n, '0.051234', 3n * E18 + 7n, 10n * E18),
  row('2026-02-28', 1_250_001n * E18, '-0.000123', 0n, 10n * E18),
  // A gap (March 1st missing) and a TVL that falls.
  row('2026-03-02', 999n * E18 + 500_000_000_000_000_000n, '1.500000', 5n, 10n * E18 + 5n),
];

describe('compact chart data', () => {
  const compact = encodeChartData({
    days: 7,
    from: '2026-02-24',
    to: '2026-03-02',
    asset: 'DAI',
    decimals: 18,
    apy: rows,
    fees: rows,
  });
  const expected = {
    date: rows.map((r) => r.date),
    underlying_apy: rows.map((r) => r.underlyingApy),
    net_apy_for_user: rows.map((r) => r.netApyForUser),
    net_apy_7d: rows.map((r) => r.netApy7d),
    engine_total_assets: rows.map((r) => formatUnits(r.engineTotalAssets, 18)),
  };

  it('decodes to the API’s exact strings, large amounts travelling as strings', () => {
    expect(compact.apy.dd).toEqual([0, 1, 2]);
    expect(compact.apy.u).toEqual([51234, -123, 1500000]);
    expect(typeof compact.apy.tvl[0]).toBe('string');
    const data = decodeChartData(compact);
    expect(data.apy_history).toEqual(expected);
    expect(data.fee_stats.daily_partner_fee_earned).toEqual(
      rows.map((r) => formatUnits(r.dailyPartnerFee!, 18)),
    );
    expect(data.fee_stats.cumulative_service_fee_earned).toEqual(
      rows.map((r) => formatUnits(r.cumulativeServiceFeeEarned, 18)),
    );
  });

  it('decodes the same in the browser’s script', () => {
    const source = readFileSync(
      new URL('../../src/portal/static/charts.js', import.meta.url),
      'utf8',
    );
    // The script draws nothing without a page; its decoder is a plain function declaration.
    const sandbox: Record<string, unknown> = { document: { getElementById: () => null } };
    runInNewContext(
      `${source}\nthis.decoded = decodeChartData(${JSON.stringify(compact)});`,
      sandbox,
    );
    expect(JSON.parse(JSON.stringify(sandbox.decoded))).toEqual(decodeChartData(compact));
  });

  it('encodes an empty window', () => {
    const empty = encodeChartData({
      days: 30,
      from: '2026-02-01',
      to: '2026-03-02',
      asset: 'USDC',
      decimals: 6,
      apy: [],
      fees: [],
    });
    expect(decodeChartData(empty).apy_history.date).toEqual([]);
  });
});

describe('a chart in a sentence', () => {
  const days = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      new Date(Date.UTC(2026, 2, 1 + i)).toISOString().slice(0, 10),
    );
  const tvl = (values: bigint[], dates = days(values.length)) =>
    trendSentence({
      label: 'TVL',
      dates,
      values,
      exact: (v) => v,
      format: (v) => money(v, 18, 'DAI'),
    });
  const apy = (values: string[]) =>
    trendSentence({
      label: 'Net APY',
      dates: days(values.length),
      values,
      exact: (v) => toBaseUnits(v, 6),
      format: percent,
    });

  it('says whether the figure rose, fell or stayed, first day to last', () => {
    expect(tvl([1_000n * E18, 1_200n * E18, 1_500n * E18])).toBe(
      'TVL rose from 1,000.00 DAI to 1,500.00 DAI over the last 3 days.',
    );
    expect(tvl([1_500n * E18, 1_000n * E18])).toBe(
      'TVL fell from 1,500.00 DAI to 1,000.00 DAI over the last 2 days.',
    );
    expect(tvl(Array(30).fill(7n * E18))).toBe('TVL stayed at 7.00 DAI over the last 30 days.');
    expect(apy(['0.051234', '0.049000'])).toBe(
      'Net APY fell from 5.12 % to 4.90 % over the last 2 days.',
    );
  });

  it('compares the exact figures, beyond what a float or the 2 places shown can tell', () => {
    // 2^53 + 1 base units and 2^53: equal as floats, not as figures.
    const big = 2n ** 53n;
    expect(Number(big + 1n)).toBe(Number(big));
    expect(tvl([big, big + 1n])).toBe(
      'TVL rose slightly over the last 2 days, staying at 0.01 DAI to 2 places.',
    );
    expect(tvl([1_000n * E18 + 1n, 1_000n * E18])).toBe(
      'TVL fell slightly over the last 2 days, staying at 1,000.00 DAI to 2 places.',
    );
    expect(apy(['0.050001', '0.050001'])).toBe('Net APY stayed at 5.00 % over the last 2 days.');
  });

  it('gives the lowest and highest figures when the window went beyond both ends', () => {
    expect(tvl([5n * E18, 9n * E18, 2n * E18, 6n * E18])).toBe(
      'TVL rose from 5.00 DAI to 6.00 DAI over the last 4 days, ranging from 2.00 DAI to 9.00 DAI.',
    );
    expect(tvl([5n * E18, 3n * E18, 5n * E18])).toBe(
      'TVL stayed at 5.00 DAI over the last 3 days, ranging from 3.00 DAI to 5.00 DAI.',
    );
  });

  it('counts the days the figures cover, gaps included; one day, or none, in words too', () => {
    expect(tvl([1n * E18, 2n * E18], ['2026-03-01', '2026-03-07'])).toBe(
      'TVL rose from 1.00 DAI to 2.00 DAI over the last 7 days.',
    );
    expect(tvl([1n * E18], ['2026-03-01'])).toBe('TVL was 1.00 DAI on 2026-03-01.');
    expect(tvl([], [])).toBe('TVL: no figures in this period.');
  });
});
