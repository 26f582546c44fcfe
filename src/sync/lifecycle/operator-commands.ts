/**
 * The operator's moves on a product (pause, resume, deprecate), used by the CLI and the tests. Each
 * records the operator's intent in the database and sends the engine's call through the chain's
 * deployer account (the engine owner). Order matters for safety:
 * - pause: database first (the product stops being offered at once, vault_pause stored), then
 *   pause() on chain;
 * - resume: unpause() on chain first, then the operator reason is cleared; the product becomes
 *   active only when no other reason remains (the worker clears the chain reason at depth);
 * - deprecate: deprecate() on chain first (it is final), then `deprecated` in the database.
 */

import type { ChainSettings } from '../../chain/chains.ts';
import type { ChainClient } from '../../chain/client.ts';
import { readEngineFlags } from '../../chain/read-engine-flags.ts';
import { type EngineOperatorCall, sendEngineCall } from '../../chain/send-engine-call.ts';
import type { Database } from '../../db/client.ts';
import { createProductsRepo, type Product, type ProductStatus } from '../../db/products.ts';
import { BaseError, type BaseErrorOptions } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { applyPauseReasons } from './status.ts';

export class InvalidMoveError extends BaseError<'invalid_move'> {
  override name = 'InvalidMoveError';
  constructor(message: string, options: BaseErrorOptions = {}) {
    super('invalid_move', message, options);
  }
}

export interface OperatorContext {
  db: Database;
  /** The chain of the product and its client; resolved by the caller. */
  chainFor(chainId: number): Promise<{ chain: ChainSettings; client: ChainClient }>;
  now?: () => Date;
  /** Where transaction progress (replacements, failures) is logged; default stderr, warnings. */
  logger?: Logger;
}

export interface OperatorOutcome {
  slug: string;
  status: ProductStatus;
  /** Transaction sent, when the engine's flag was not already in the wanted state. */
  txHash?: `0x${string}`;
  /** Reasons that still keep the product paused after a resume. */
  stillPausedBy: string[];
}

async function load(db: Database, slug: string): Promise<Product> {
  const p = await createProductsRepo(db).getBySlug(slug);
  if (!p) throw new InvalidMoveError(`no product with slug "${slug}"`);
  return p;
}

function requireEngine(p: Product, verb: string): `0x${string}` {
  if (p.status === 'pending_deploy' || !p.engineAddress) {
    throw new InvalidMoveError(`cannot ${verb} ${p.slug}: it is pending_deploy (no engine yet)`);
  }
  if (p.status === 'deprecated') {
    throw new InvalidMoveError(`cannot ${verb} ${p.slug}: it is deprecated, which is final`);
  }
  return p.engineAddress;
}

function reasonsOf(p: Product): string[] {
  return [
    p.operatorPaused && 'operator',
    p.chainPaused && 'engine paused on chain',
    p.upstreamHalted && 'upstream vault halted',
  ].filter((x): x is string => typeof x === 'string');
}

async function callUnless(
  ctx: OperatorContext,
  p: Product,
  engine: `0x${string}`,
  call: EngineOperatorCall,
  done: (flags: { paused: boolean; deprecated: boolean }) => boolean,
): Promise<`0x${string}` | undefined> {
  const { chain, client } = await ctx.chainFor(p.chainId);
  if (done(await readEngineFlags(client, { engine }))) return undefined;
  const purpose = `${call === 'unpause' ? 'resume' : call} ${p.slug}`;
  return sendEngineCall(chain, client, { engine, call, purpose }, ctx);
}

export async function pauseProduct(ctx: OperatorContext, slug: string): Promise<OperatorOutcome> {
  const p = await load(ctx.db, slug);
  const engine = requireEngine(p, 'pause');
  await applyPauseReasons(ctx.db, p, { operatorPaused: true }, (ctx.now ?? (() => new Date()))());
  const txHash = await callUnless(ctx, p, engine, 'pause', (f) => f.paused);
  const after = await load(ctx.db, slug);
  return { slug, status: after.status, txHash, stillPausedBy: reasonsOf(after) };
}

export async function resumeProduct(ctx: OperatorContext, slug: string): Promise<OperatorOutcome> {
  const p = await load(ctx.db, slug);
  const engine = requireEngine(p, 'resume');
  const txHash = await callUnless(ctx, p, engine, 'unpause', (f) => !f.paused);
  // The chain reason is the worker's to clear, at confirmation depth; the operator's is cleared now.
  await applyPauseReasons(ctx.db, p, { operatorPaused: false }, (ctx.now ?? (() => new Date()))());
  const after = await load(ctx.db, slug);
  return { slug, status: after.status, txHash, stillPausedBy: reasonsOf(after) };
}

export async function deprecateProduct(
  ctx: OperatorContext,
  slug: string,
): Promise<OperatorOutcome> {
  const p = await load(ctx.db, slug);
  const engine = requireEngine(p, 'deprecate');
  const txHash = await callUnless(ctx, p, engine, 'deprecate', (f) => f.deprecated);
  await createProductsRepo(ctx.db).markDeprecated(p.id);
  const after = await load(ctx.db, slug);
  return { slug, status: after.status, txHash, stillPausedBy: [] };
}
