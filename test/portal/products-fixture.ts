/**
 * Products with a year of daily snapshots, for the portal's dashboards in tests and in
 * `npm run bench:portal`. The rows are written directly (the service writes them from chain reads),
 * shaped like real ones: TVL that drifts, APYs that move day to day, and fees that are exactly the
 * configured shares of each day's yield, so that the daily figures sum to the cumulative ones.
 */
import type { Database } from '../../src/db/client.ts';
import {
  createProductsRepo,
  type Environment,
  type Product,
  type ProductStatus,
} from '../../src/db/products.ts';
import { address, newProduct } from '../helpers/builders.ts';
import { daysEnding, insertSnapshots, type SnapshotRow } from '../helpers/snapshots.ts';

const A = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as `0x${string}`;

export interface FixtureProduct {
  slug: string;
  displayName: string;
  environment: Environment;
  status: Exclude<ProductStatus, 'pending_deploy'> | 'pending_deploy';
  /** Days of history ending at `lastDay` (0: none). */
  days: number;
  /** Whole USDC at the start. */
  startTvl?: number;
}

/** The latest finished day the fixture's histories end at: yesterday (UTC) of `now`. */
export function yesterday(now = new Date()): string {
  return new Date(now.getTime() - 86_400_000).toISOString().slice(0, 10);
}

let counter = 0;

export async function seedProducts(
  db: Database,
  partnerId: string,
  products: readonly FixtureProduct[],
  lastDay = yesterday(),
): Promise<Product[]> {
  const repo = createProductsRepo(db);
  const out: Product[] = [];
  for (const p of products) {
    const n = ++counter + Math.floor(Math.random() * 1e6);
    const product = await repo.create(
      newProduct({
        partnerId,
        environment: p.environment,
        slug: p.slug,
        displayName: p.displayName,
        engineName: `${p.displayName} engine`,
        engineSymbol: 'pyUSDC',
        underlyingVaultAddress: address(0x1000 + n),
        assetAddress: address(7),
        serviceFeeBps: 150,
        partnerFeeBps: 250,
        serviceFeeRecipient: address(8),
        partnerFeeRecipient: address(9),
        ...(p.status === 'pending_deploy'
          ? {}
          : {
              deployed: {
                engineAddress: A(0x100000 + n),
                shareDecimals: 12,
                block: 5n,
                at: new Date(Date.parse(`${lastDay}T00:00:00Z`) - p.days * 86_400_000),
                status: p.status,
              },
            }),
      }),
    );
    if (p.days > 0) await insertSnapshots(db, product.id, history(p.days, lastDay, p.startTvl));
    out.push(product);
  }
  return out;
}

/**
 * A history of `days` days: the first day has no APY (no previous day), as the service writes it.
 * Underlying APY moves between ~3.5% and ~6.5%; the fee is 4% of the yield (2.5% partner, 1.5%
 * service), so net APY is underlying × 0.96.
 */
export function history(days: number, lastDay: string, startTvl = 1_250_000): SnapshotRow[] {
  let tvl = BigInt(startTvl) * 1_000_000n;
  let partnerTotal = 0n;
  let serviceTotal = 0n;
  const nets: number[] = [];
  return daysEnding(lastDay, days).map((date, i) => {
    if (i === 0) return { date, totalAssets: tvl, underlyingApy: null, netApy: null };
    // APY in parts per million: a slow wave plus a small day-to-day wobble.
    const ppm = 50_000 + Math.round(12_000 * Math.sin(i / 23) + 2_500 * Math.sin(i * 1.7));
    const yieldAssets = (tvl * BigInt(ppm)) / 365n / 1_000_000n;
    const partnerFee = (yieldAssets * 250n) / 10_000n;
    const serviceFee = (yieldAssets * 150n) / 10_000n;
    partnerTotal += partnerFee;
    serviceTotal += serviceFee;
    // Net flows: deposits outweigh withdrawals on most days.
    const flow = BigInt(Math.round(4_000 * Math.sin(i / 9) + 1_500)) * 1_000_000n;
    tvl += yieldAssets - partnerFee - serviceFee + flow;
    const net = Math.round(ppm * 0.96);
    nets.push(net);
    // The 7-day figure from the seventh day on: a smoother wave (the days' mean, near enough for a
    // fixture; the real figure is the share-price ratio, test/sync/realised-apy.test.ts).
    const week = nets.length >= 7 ? nets.slice(-7) : null;
    return {
      date,
      totalAssets: tvl,
      underlyingApy: (ppm / 1e6).toFixed(6),
      netApy: (net / 1e6).toFixed(6),
      netApy7d: week && (Math.round(week.reduce((a, b) => a + b, 0) / 7) / 1e6).toFixed(6),
      dailyYield: yieldAssets,
      dailyPartnerFee: partnerFee,
      dailyServiceFee: serviceFee,
      partnerFeeTotal: partnerTotal,
      serviceFeeTotal: serviceTotal,
      partnerFeePending: 0n,
      serviceFeePending: 0n,
    };
  });
}
