/**
 * The operator's fee moves on a product's engine, used by the CLI and the tests: show the fees (in
 * force and scheduled), change them, apply a scheduled increase once its notice has passed, cancel
 * one. A change that raises neither fee applies at once; one that raises either is only scheduled
 * (the engine's `feeChangeDelay`, fixed at deployment) and applies through `applyFeeChange()`.
 * The product's `service_fee_bps`/`partner_fee_bps` are the fees in force: the status follower
 * copies them from the engine at confirmation depth, so the database never shows a fee the chain
 * does not charge (not even a scheduled one).
 */
import { decodeEventLog } from 'viem';
import { yieldEngineAbi } from '../../chain/generated/YieldEngine.ts';
import { type FeesInForce, readFeesInForce } from '../../chain/read-fees-in-force.ts';
import {
  readScheduledFeeChange,
  type ScheduledFeeChange,
} from '../../chain/read-scheduled-fee-change.ts';
import { sendEngineCallReceipt } from '../../chain/send-engine-call.ts';
import { feesError } from '../../db/product-rules.ts';
import { createProductsRepo, type Product } from '../../db/products.ts';
import { InvalidMoveError, type OperatorContext } from './operator-commands.ts';

export interface ProductFees {
  slug: string;
  /** On chain, now. */
  inForce: FeesInForce;
  /** What the product row (and so the API) shows; equal to inForce once the follower caught up. */
  recorded: FeesInForce;
  scheduled: ScheduledFeeChange | null;
}

export interface FeeMoveOutcome extends ProductFees {
  txHash: `0x${string}`;
  /** setFees: `applied` (no fee rose) or `scheduled` (an increase, after its notice). */
  result: 'applied' | 'scheduled' | 'cancelled';
}

async function engineOf(ctx: OperatorContext, slug: string): Promise<Product> {
  const p = await createProductsRepo(ctx.db).getBySlug(slug);
  if (!p) throw new InvalidMoveError(`no product with slug "${slug}"`);
  if (p.status === 'pending_deploy' || !p.engineAddress) {
    throw new InvalidMoveError(`${slug} is pending_deploy: its engine does not exist yet`);
  }
  return p;
}

async function feesOf(ctx: OperatorContext, p: Product): Promise<ProductFees> {
  const { client } = await ctx.chainFor(p.chainId);
  const engine = p.engineAddress as `0x${string}`;
  const [inForce, scheduled] = await Promise.all([
    readFeesInForce(client, { engine }),
    readScheduledFeeChange(client, { engine }),
  ]);
  return {
    slug: p.slug,
    inForce,
    recorded: { serviceFeeBps: p.serviceFeeBps, partnerFeeBps: p.partnerFeeBps },
    scheduled,
  };
}

export async function showProductFees(ctx: OperatorContext, slug: string): Promise<ProductFees> {
  return feesOf(ctx, await engineOf(ctx, slug));
}

function checkBps(fees: FeesInForce): void {
  const error = feesError(fees.serviceFeeBps, fees.partnerFeeBps);
  if (error) throw new InvalidMoveError(error);
}

/** setFees(): a decrease (or no rise) applies at once; an increase is scheduled after its notice. */
export async function changeProductFees(
  ctx: OperatorContext,
  slug: string,
  fees: FeesInForce,
): Promise<FeeMoveOutcome> {
  checkBps(fees);
  const p = await engineOf(ctx, slug);
  if (p.status === 'deprecated') {
    throw new InvalidMoveError(`cannot change the fees of ${slug}: it is deprecated`);
  }
  const { chain, client } = await ctx.chainFor(p.chainId);
  const receipt = await sendEngineCallReceipt(
    chain,
    client,
    {
      engine: p.engineAddress as `0x${string}`,
      call: fees,
      purpose: `set fees ${slug} ${fees.serviceFeeBps}/${fees.partnerFeeBps} bps`,
    },
    ctx,
  );
  const names = receipt.logs
    .filter((l) => l.address.toLowerCase() === p.engineAddress?.toLowerCase())
    .map((l) => {
      try {
        return decodeEventLog({ abi: yieldEngineAbi, data: l.data, topics: l.topics }).eventName;
      } catch {
        return undefined;
      }
    });
  const result = names.includes('FeeChangeScheduled') ? 'scheduled' : 'applied';
  return { ...(await feesOf(ctx, p)), txHash: receipt.transactionHash, result };
}

/** applyFeeChange(): the scheduled increase, once its notice has passed. */
export async function applyProductFeeChange(
  ctx: OperatorContext,
  slug: string,
): Promise<FeeMoveOutcome> {
  const p = await engineOf(ctx, slug);
  const { chain, client } = await ctx.chainFor(p.chainId);
  const engine = p.engineAddress as `0x${string}`;
  const scheduled = await readScheduledFeeChange(client, { engine });
  if (!scheduled) throw new InvalidMoveError(`${slug} has no scheduled fee change`);
  const block = await client.getBlock();
  if (block.timestamp < scheduled.effectiveAt) {
    const at = new Date(Number(scheduled.effectiveAt) * 1000).toISOString();
    throw new InvalidMoveError(`the fee change of ${slug} may apply from ${at}, not before`);
  }
  const receipt = await sendEngineCallReceipt(
    chain,
    client,
    { engine, call: 'applyFeeChange', purpose: `apply fee change ${slug}` },
    ctx,
  );
  return { ...(await feesOf(ctx, p)), txHash: receipt.transactionHash, result: 'applied' };
}

/** cancelFeeChange(): the scheduled increase never applies. */
export async function cancelProductFeeChange(
  ctx: OperatorContext,
  slug: string,
): Promise<FeeMoveOutcome> {
  const p = await engineOf(ctx, slug);
  const { chain, client } = await ctx.chainFor(p.chainId);
  const engine = p.engineAddress as `0x${string}`;
  if (!(await readScheduledFeeChange(client, { engine }))) {
    throw new InvalidMoveError(`${slug} has no scheduled fee change`);
  }
  const receipt = await sendEngineCallReceipt(
    chain,
    client,
    { engine, call: 'cancelFeeChange', purpose: `cancel fee change ${slug}` },
    ctx,
  );
  return { ...(await feesOf(ctx, p)), txHash: receipt.transactionHash, result: 'cancelled' };
}
