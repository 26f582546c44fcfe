/**
 * `yield-service product create|list|pause|resume|deprecate|release`. A created product is
 * `pending_deploy`; the worker deploys it. Pause, resume and deprecate send the engine's call
 * through the chain's deployer account and record the operator's move (see
 * src/sync/lifecycle/operator-commands.ts for the order of the two).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type Address, getAddress, isAddress } from 'viem';
import { AssetCheckError, checkAsset } from '../chain/asset-probe.ts';
import type { ChainSettings } from '../chain/chains.ts';
import type { Config } from '../config.ts';
import { createProductDeploysRepo } from '../db/product-deploys.ts';
import { feesError, slugError } from '../db/product-rules.ts';
import {
  createProductsRepo,
  type Environment,
  type Product,
  type RiskLabel,
  type VaultKind,
} from '../db/products.ts';
import { configuredChains } from '../sync/chain-runtime.ts';
import {
  deprecateProduct,
  type OperatorOutcome,
  pauseProduct,
  resumeProduct,
} from '../sync/lifecycle/operator-commands.ts';
import { integerInRange, partnerNamed } from './arguments.ts';
import { runOperatorCall, withOperatorChain } from './operator.ts';
import { registerProductFeeCommands } from './product-fees-command.ts';
import { type CommandContext, CommandError, table } from './shared.ts';

interface CreateOptions {
  partner: string;
  env: Environment;
  slug: string;
  displayName: string;
  risk: RiskLabel;
  chainId: number;
  vaultKind: VaultKind;
  underlying: Address;
  asset: Address;
  assetSymbol: string;
  assetDecimals: number;
  serviceFeeBps: number;
  partnerFeeBps: number;
  serviceRecipient: Address;
  partnerRecipient: Address;
  engineName?: string;
  engineSymbol?: string;
  usdPrice?: string;
  hold: boolean;
  /** Create without the asset check (asset-probe.ts); the engine still refuses a short transfer. */
  skipAssetCheck: boolean;
  json: boolean;
}

/** EIP-55 form of a valid address; a mixed-case address with a wrong checksum is refused. */
const address = (raw: string): Address => {
  if (!isAddress(raw)) {
    throw new InvalidArgumentError('a 0x address of 40 hex digits (mixed case must be EIP-55)');
  }
  return getAddress(raw);
};

const slug = (raw: string): string => {
  const error = slugError(raw);
  if (error) throw new InvalidArgumentError(error);
  return raw;
};

const text =
  (max: number) =>
  (raw: string): string => {
    const v = raw.trim();
    if (v.length === 0 || v.length > max) throw new InvalidArgumentError(`1 to ${max} characters`);
    return v;
  };

const usdPrice = (raw: string): string => {
  if (!/^\d+(\.\d+)?$/.test(raw) || !/[1-9]/.test(raw)) {
    throw new InvalidArgumentError('a positive decimal such as 1 or 0.9998');
  }
  return raw;
};

function productJson(p: Product) {
  return {
    id: p.id,
    slug: p.slug,
    partner: p.partnerName,
    environment: p.environment,
    status: p.status,
    display_name: p.displayName,
    risk_label: p.riskLabel,
    chain_id: p.chainId,
    vault_kind: p.vaultKind,
    engine_contract_address: p.engineAddress,
    underlying_vault_address: p.underlyingVaultAddress,
    asset_address: p.assetAddress,
    asset_symbol: p.assetSymbol,
    asset_decimals: p.assetDecimals,
    service_fee_bps: p.serviceFeeBps,
    partner_fee_bps: p.partnerFeeBps,
    service_fee_recipient: p.serviceFeeRecipient,
    partner_fee_recipient: p.partnerFeeRecipient,
    engine_name: p.engineName,
    engine_symbol: p.engineSymbol,
    usd_price: p.usdPrice,
    pause_reasons: {
      operator: p.operatorPaused,
      chain: p.chainPaused,
      upstream: p.upstreamHalted,
    },
    deploy_tx_hash: p.deployTxHash,
  };
}

async function createProduct(ctx: CommandContext, opts: CreateOptions): Promise<void> {
  const config = ctx.config();
  const fees = feesError(opts.serviceFeeBps, opts.partnerFeeBps);
  if (fees) throw new CommandError(fees, 'invalid_fees');
  const chains = configuredChainsOrFail(config);
  if (!chains.some((c) => c.chainId === opts.chainId)) {
    throw new CommandError(
      `chain ${opts.chainId} is not configured (configured: ${chains.map((c) => c.chainId).join(', ')})`,
      'unknown_chain',
    );
  }
  if (!opts.skipAssetCheck) await checkProductAsset(config, opts);
  const product = await ctx.withDatabase(config, async (db) => {
    const partner = await partnerNamed(db, opts.partner);
    const products = createProductsRepo(db);
    if (await products.getBySlug(opts.slug)) {
      throw new CommandError(`the slug "${opts.slug}" is taken`, 'exists');
    }
    return db.transaction(async (tx) => {
      const created = await createProductsRepo(tx).create({
        partnerId: partner.id,
        environment: opts.env,
        slug: opts.slug,
        displayName: opts.displayName,
        riskLabel: opts.risk,
        chainId: opts.chainId,
        vaultKind: opts.vaultKind,
        engineName: opts.engineName ?? opts.displayName,
        engineSymbol: opts.engineSymbol ?? `y${opts.assetSymbol}`,
        underlyingVaultAddress: opts.underlying,
        assetAddress: opts.asset,
        assetSymbol: opts.assetSymbol,
        assetDecimals: opts.assetDecimals,
        serviceFeeBps: opts.serviceFeeBps,
        partnerFeeBps: opts.partnerFeeBps,
        serviceFeeRecipient: opts.serviceRecipient,
        partnerFeeRecipient: opts.partnerRecipient,
        usdPrice: opts.usdPrice ?? null,
      });
      if (opts.hold) await createProductDeploysRepo(tx).setHold(created.id, true);
      return created;
    });
  });
  if (opts.json) ctx.printJson(productJson(product));
  else {
    ctx.print(
      `Created ${product.slug} (${product.id}): pending_deploy${opts.hold ? ', held (run `product release` to deploy)' : '; the worker deploys it'}`,
    );
  }
}

/**
 * Refuses an asset the engine cannot hold fairly (fee-on-transfer, rebasing) or that does not match
 * the underlying vault or the decimals given, before anything is written (docs/engine.md).
 */
async function checkProductAsset(config: Config, opts: CreateOptions): Promise<void> {
  try {
    await withOperatorChain(config, opts.chainId, (client) =>
      checkAsset(client, {
        asset: opts.asset,
        underlying: opts.underlying,
        decimals: opts.assetDecimals,
      }),
    );
  } catch (err) {
    if (!(err instanceof AssetCheckError)) throw err;
    const hint =
      err.code === 'asset_not_checked'
        ? ' (--skip-asset-check creates it anyway; the engine still refuses a deposit that delivers less than it sends)'
        : '';
    throw new CommandError(`cannot create ${opts.slug}: ${err.message}${hint}`, err.code);
  }
}

function configuredChainsOrFail(config: Config): ChainSettings[] {
  try {
    return configuredChains(config).chains;
  } catch (err) {
    throw new CommandError(err instanceof Error ? err.message : String(err), 'chains_file');
  }
}

async function operatorMove(
  ctx: CommandContext,
  verb: 'pause' | 'resume' | 'deprecate',
  slugArg: string,
  opts: { json: boolean },
): Promise<void> {
  const move = { pause: pauseProduct, resume: resumeProduct, deprecate: deprecateProduct }[verb];
  const outcome: OperatorOutcome = await runOperatorCall(ctx, (operator) =>
    move(operator, slugArg),
  );
  if (opts.json) {
    ctx.printJson({
      slug: outcome.slug,
      status: outcome.status,
      tx_hash: outcome.txHash ?? null,
      still_paused_by: outcome.stillPausedBy,
    });
    return;
  }
  const tx = outcome.txHash
    ? ` (transaction ${outcome.txHash})`
    : ' (engine already in that state)';
  const still =
    outcome.status === 'paused' && verb === 'resume'
      ? `; still paused by: ${outcome.stillPausedBy.join(', ')} (the worker clears the chain reasons once the engine and vault are back)`
      : '';
  ctx.print(`${outcome.slug}: ${outcome.status}${tx}${still}`);
}

export function registerProductCommand(program: Command, ctx: CommandContext): void {
  const product = program.command('product').description('manage products');

  product
    .command('create')
    .description('create a product in pending_deploy; the worker deploys its engine')
    .requiredOption('--partner <name>', 'partner name')
    .addOption(
      new Option('--env <env>', 'partner environment')
        .choices(['live', 'test'])
        .makeOptionMandatory(),
    )
    .requiredOption('--slug <slug>', 'unique identifier used in API paths', slug)
    .requiredOption('--display-name <name>', 'human-readable name', text(200))
    .addOption(
      new Option('--risk <label>', 'risk label')
        .choices(['low', 'medium', 'high'])
        .makeOptionMandatory(),
    )
    .requiredOption(
      '--chain-id <id>',
      'chain of the engine (a configured chain)',
      integerInRange(1, 2 ** 48),
    )
    .addOption(
      new Option('--vault-kind <kind>', 'redeem model of the underlying vault')
        .choices(['sync', 'async'])
        .makeOptionMandatory(),
    )
    .requiredOption('--underlying <address>', 'underlying ERC-4626 vault', address)
    .requiredOption('--asset <address>', 'asset (stablecoin) contract', address)
    .requiredOption('--asset-symbol <symbol>', 'asset symbol', text(32))
    .requiredOption('--asset-decimals <n>', 'asset decimals', integerInRange(0, 77))
    .requiredOption(
      '--service-fee-bps <n>',
      'service fee on yield, basis points',
      integerInRange(0, 5000),
    )
    .requiredOption(
      '--partner-fee-bps <n>',
      'partner fee on yield, basis points',
      integerInRange(0, 5000),
    )
    .requiredOption('--service-recipient <address>', 'receives the service fee shares', address)
    .requiredOption('--partner-recipient <address>', 'receives the partner fee shares', address)
    .option(
      '--engine-name <name>',
      'ERC-20 name of the engine share (default: display name)',
      text(100),
    )
    .option(
      '--engine-symbol <symbol>',
      'ERC-20 symbol of the engine share (default: y<asset>)',
      text(32),
    )
    .option('--usd-price <price>', 'USD price of one asset unit (default: USD-pegged, 1)', usdPrice)
    .option('--hold', 'keep it pending_deploy until `product release`', false)
    .option(
      '--skip-asset-check',
      'do not simulate transfers of the asset on the chain (for a node without eth_createAccessList or state overrides)',
      false,
    )
    .option('--json', 'print the product as JSON', false)
    .action((opts: CreateOptions) => createProduct(ctx, opts));

  product
    .command('list')
    .description('list products')
    .option('--partner <name>', 'only this partner')
    .option('--json', 'print JSON', false)
    .action(async (opts: { partner?: string; json: boolean }) => {
      const config = ctx.config();
      const all = await ctx.withDatabase(config, (db) => createProductsRepo(db).listAll());
      const rows = opts.partner ? all.filter((p) => p.partnerName === opts.partner) : all;
      if (opts.json) return ctx.printJson(rows.map(productJson));
      if (rows.length === 0) return ctx.print('No products.');
      ctx.print(
        table([
          ['SLUG', 'PARTNER', 'ENV', 'STATUS', 'CHAIN', 'ENGINE'],
          ...rows.map((p) => [
            p.slug,
            p.partnerName,
            p.environment,
            p.status,
            String(p.chainId),
            p.engineAddress ?? '-',
          ]),
        ]),
      );
    });

  for (const [verb, description] of [
    ['pause', 'pause a product: recorded at once, then pause() on its engine'],
    [
      'resume',
      'resume a paused product: unpause() on its engine, then the operator pause is lifted',
    ],
    ['deprecate', 'deprecate a product (final): deprecate() on its engine, then deprecated'],
  ] as const) {
    product
      .command(`${verb} <slug>`)
      .description(description)
      .option('--json', 'print JSON', false)
      .action((slugArg: string, opts: { json: boolean }) => operatorMove(ctx, verb, slugArg, opts));
  }

  registerProductFeeCommands(product, ctx);

  product
    .command('release <slug>')
    .description('let the worker deploy a product created with --hold (or held after a failure)')
    .action(async (slugArg: string) => {
      const config = ctx.config();
      await ctx.withDatabase(config, async (db) => {
        const p = await createProductsRepo(db).getBySlug(slugArg);
        if (!p) throw new CommandError(`no product with slug "${slugArg}"`, 'not_found');
        if (!(await createProductDeploysRepo(db).setHold(p.id, false))) {
          throw new CommandError(
            `${slugArg} is ${p.status}: only pending_deploy can be released`,
            'invalid_move',
          );
        }
      });
      ctx.print(`${slugArg}: released; the worker deploys it`);
    });
}
