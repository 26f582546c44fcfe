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
import {
  chainErrorMessage,
  type EngineOperatorCall,
  OperatorError,
  sendEngineCall,
} from '../../chain/send-engine-call.ts';
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

/**
 * The chain step of a move failed (a provider that does not answer, a signer that is down, a
 * transaction that did not complete): one line saying what the database holds now and what to
 * run, with the chain's short reason (never a provider URL: viem's shortMessage has none).
 */
async function chainStep<T>(step: () => Promise<T>, said: (cause: string) => string): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof InvalidMoveError) throw err;
    // viem's messages end with a full stop; the sentence around them has its own.
    throw new OperatorError(said(chainErrorMessage(err).replace(/\.$/, '')), { cause: err });
  }
}

export async function pauseProduct(ctx: OperatorContext, slug: string): Promise<OperatorOutcome> {
  const p = await load(ctx.db, slug);
  const engine = requireEngine(p, 'pause');
  await applyPauseReasons(ctx.db, p, { operatorPaused: true }, (ctx.now ?? (() => new Date()))());
  // Re-running the command is the repair: it sends nothing when the engine is already paused.
  const txHash = await chainStep(
    () => callUnless(ctx, p, engine, 'pause', (f) => f.paused),
    (cause) =>
      `${slug} is recorded as paused (the API shows it paused; vault_pause is sent), but pause() on its engine did not complete: ${cause}. Deposits on chain stay open until it does: fix that (\`yield-service tx list\` shows a transaction sent), then run \`yield-service product pause ${slug}\` again.`,
  );
  const after = await load(ctx.db, slug);
  return { slug, status: after.status, txHash, stillPausedBy: reasonsOf(after) };
}

export async function resumeProduct(ctx: OperatorContext, slug: string): Promise<OperatorOutcome> {
  const p = await load(ctx.db, slug);
  const engine = requireEngine(p, 'resume');
  const txHash = await chainStep(
    () => callUnless(ctx, p, engine, 'unpause', (f) => !f.paused),
    (cause) =>
      `${slug} is still paused: unpause() on its engine did not complete: ${cause}. Nothing else changed; run \`yield-service product resume ${slug}\` again once that is fixed.`,
  );
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
  const txHash = await chainStep(
    () => callUnless(ctx, p, engine, 'deprecate', (f) => f.deprecated),
    (cause) =>
      `${slug} is not deprecated: deprecate() on its engine did not complete: ${cause}. Nothing changed; run \`yield-service product deprecate ${slug}\` again once that is fixed.`,
  );
  await createProductsRepo(ctx.db).markDeprecated(p.id);
  const after = await load(ctx.db, slug);
  return { slug, status: after.status, txHash, stillPausedBy: [] };
}
