/**
 * `yield-service product fees|set-fees|apply-fees|cancel-fees`: the fees of a product's engine.
 * A change that raises neither fee applies at once; one that raises either is scheduled on chain and
 * may apply only after the engine's notice period (fixed at its deployment, 7 days by default),
 * through `apply-fees`. The product's service_fee_bps/partner_fee_bps (what the API shows) follow the
 * engine's fees in force at confirmation depth (the worker's status follower).
 */
import type { Command } from 'commander';
import {
  applyProductFeeChange,
  cancelProductFeeChange,
  changeProductFees,
  type FeeMoveOutcome,
  type ProductFees,
  showProductFees,
} from '../sync/lifecycle/fee-commands.ts';
import type { OperatorContext } from '../sync/lifecycle/operator-commands.ts';
import { integerInRange } from './arguments.ts';
import { runOperatorCall } from './operator.ts';
import type { CommandContext } from './shared.ts';

const bps = integerInRange(0, 5000);

function feesJson(f: ProductFees | FeeMoveOutcome) {
  return {
    slug: f.slug,
    ...('result' in f ? { result: f.result, tx_hash: f.txHash } : {}),
    in_force: {
      service_fee_bps: f.inForce.serviceFeeBps,
      partner_fee_bps: f.inForce.partnerFeeBps,
    },
    recorded: {
      service_fee_bps: f.recorded.serviceFeeBps,
      partner_fee_bps: f.recorded.partnerFeeBps,
    },
    scheduled: f.scheduled && {
      service_fee_bps: f.scheduled.serviceFeeBps,
      partner_fee_bps: f.scheduled.partnerFeeBps,
      effective_at: new Date(Number(f.scheduled.effectiveAt) * 1000).toISOString(),
    },
  };
}

function feesText(f: ProductFees | FeeMoveOutcome): string {
  const lines: string[] = [];
  if ('result' in f) lines.push(`${f.slug}: ${f.result} (transaction ${f.txHash})`);
  lines.push(
    `in force: service ${f.inForce.serviceFeeBps} bps, partner ${f.inForce.partnerFeeBps} bps`,
  );
  if (
    f.recorded.serviceFeeBps !== f.inForce.serviceFeeBps ||
    f.recorded.partnerFeeBps !== f.inForce.partnerFeeBps
  ) {
    lines.push(
      `shown by the API: service ${f.recorded.serviceFeeBps} bps, partner ${f.recorded.partnerFeeBps} bps (the worker updates it once the change is confirmed)`,
    );
  }
  if (f.scheduled) {
    const at = new Date(Number(f.scheduled.effectiveAt) * 1000).toISOString();
    lines.push(
      `scheduled: service ${f.scheduled.serviceFeeBps} bps, partner ${f.scheduled.partnerFeeBps} bps, may apply from ${at} (product apply-fees)`,
    );
  } else {
    lines.push('scheduled: none');
  }
  return lines.join('\n');
}

async function run(
  ctx: CommandContext,
  move: (operator: OperatorContext) => Promise<ProductFees | FeeMoveOutcome>,
  opts: { json: boolean },
): Promise<void> {
  const out = await runOperatorCall(ctx, move);
  if (opts.json) ctx.printJson(feesJson(out));
  else ctx.print(feesText(out));
}

export function registerProductFeeCommands(product: Command, ctx: CommandContext): void {
  product
    .command('fees <slug>')
    .description("show a product's fees: in force on its engine, shown by the API, scheduled")
    .option('--json', 'print JSON', false)
    .action((slug: string, opts: { json: boolean }) =>
      run(ctx, (operator) => showProductFees(operator, slug), opts),
    );

  product
    .command('set-fees <slug>')
    .description(
      "change a product's fees: a decrease applies at once; an increase is scheduled and applies only after the engine's notice period (apply-fees)",
    )
    .requiredOption('--service-fee-bps <n>', 'service fee on yield, basis points', bps)
    .requiredOption('--partner-fee-bps <n>', 'partner fee on yield, basis points', bps)
    .option('--json', 'print JSON', false)
    .action((slug: string, opts: { serviceFeeBps: number; partnerFeeBps: number; json: boolean }) =>
      run(
        ctx,
        (operator) =>
          changeProductFees(operator, slug, {
            serviceFeeBps: opts.serviceFeeBps,
            partnerFeeBps: opts.partnerFeeBps,
          }),
        opts,
      ),
    );

  product
    .command('apply-fees <slug>')
    .description('apply a scheduled fee increase once its notice period has passed')
    .option('--json', 'print JSON', false)
    .action((slug: string, opts: { json: boolean }) =>
      run(ctx, (operator) => applyProductFeeChange(operator, slug), opts),
    );

  product
    .command('cancel-fees <slug>')
    .description('cancel a scheduled fee increase')
    .option('--json', 'print JSON', false)
    .action((slug: string, opts: { json: boolean }) =>
      run(ctx, (operator) => cancelProductFeeChange(operator, slug), opts),
    );
}
