/**
 * The product page's compact chart data (src/portal/chart-data.ts) decodes to exactly the API's
 * decimal strings, including amounts beyond 2^53 base units (an 18-decimal asset), negative values
 * and gaps between days; and the browser's decoder (static/charts.js) agrees with the server's.
 */
import { readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { SnapshotView } from '../../src/db/snapshot-reads.ts';
import { formatUnits } from '../../src/money/index.ts';
import { decodeChartData, encodeChartData } from '../../src/portal/chart-data.ts';

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
