/**
 * Which days a product lacks: from its engine's deployment day to the last closed day, minus the
 * days that already have a final row. A provisional or legacy row neither covers its day nor is a
 * previous day (src/db/snapshots.ts), so such days are planned as if the row were absent.
 */
import type { Product } from '../../db/products.ts';
import { isFinal, type Snapshot, type SnapshotsRepo } from '../../db/snapshots.ts';
import { addDays, type BlockTimes, daysBetween, utcDate } from '../day-boundary.ts';

/** A product's work in one run: the days it lacks, in order, and what precedes the first one. */
export interface ProductPlan {
  product: Product;
  engine: `0x${string}`;
  deployedBlock: bigint;
  /** Missing days, oldest first. */
  days: string[];
  /** Existing rows by date (the previous day of a missing day, when it exists). */
  existing: Map<string, Snapshot>;
}

export async function planProduct(
  snapshots: Pick<SnapshotsRepo, 'coverage' | 'latestFinal' | 'listRange'>,
  product: Product,
  deployedBlock: bigint,
  times: BlockTimes,
  lastDay: string,
): Promise<ProductPlan> {
  const engine = product.engineAddress!;
  const firstDay = utcDate(await times.timestamp(deployedBlock));
  const plan: ProductPlan = { product, engine, deployedBlock, days: [], existing: new Map() };
  if (firstDay > lastDay) return plan;
  const { count, latestDate } = await snapshots.coverage(product.id);
  if (latestDate === null) {
    plan.days = dayRange(firstDay, lastDay);
  } else if (count === daysBetween(firstDay, latestDate) + 1) {
    // The usual case: no holes, so only the days after the newest row are missing.
    const latest = await snapshots.latestFinal(product.id);
    if (latest) plan.existing.set(latest.date, latest);
    plan.days = dayRange(addDays(latestDate, 1), lastDay);
  } else {
    // Holes (rows deleted by hand, say): fill every missing day, each against its previous day.
    for (const row of await snapshots.listRange(product.id, firstDay, lastDay)) {
      if (isFinal(row)) plan.existing.set(row.date, row);
    }
    plan.days = dayRange(firstDay, lastDay).filter((d) => !plan.existing.has(d));
  }
  return plan;
}

/**
 * A block before the end of every plan's first missing day (its previous row's block, or its
 * deployment block on its first day): where the boundary search of the oldest day may start.
 */
export function searchStart(plans: readonly ProductPlan[]): bigint {
  let start: bigint | undefined;
  for (const p of plans) {
    const prev = p.existing.get(addDays(p.days[0]!, -1));
    const block = prev ? prev.blockNumber : p.deployedBlock;
    if (start === undefined || block < start) start = block;
  }
  if (start === undefined) throw new RangeError('no plan to search for');
  return start;
}

function dayRange(from: string, to: string): string[] {
  const days: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) days.push(d);
  return days;
}
