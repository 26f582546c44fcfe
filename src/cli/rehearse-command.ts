/**
 * `yield-service rehearse`: the whole path of going live, self-contained on this machine (a fresh
 * anvil with a public chain's id, a remote signer, an HTTPS receiver, the worker on a temporary
 * embedded database), one line per step; exit code 0 only when every step passed. The run itself
 * is in rehearsal/run.ts. Ctrl-C stops the step in progress and cleans everything up.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { LOCAL_CHAIN_IDS } from '../chain/chains.ts';
import { integerInRange } from './arguments.ts';
import { DEFAULT_REHEARSAL, type RehearsalOptions, runRehearsal } from './rehearsal/run.ts';
import { type CommandContext, CommandError } from './shared.ts';

/** A public chain's id: on a development id (31337, 1337) the public chains' rules do not apply. */
function publicChainId(raw: string): number {
  const id = integerInRange(1, 2 ** 31 - 1)(raw);
  if (LOCAL_CHAIN_IDS.has(id)) {
    throw new InvalidArgumentError(
      `${id} is a development chain id, where a plaintext key is allowed; rehearse with a public chain's id (8453 Base, 1 Ethereum, 42161 Arbitrum One)`,
    );
  }
  return id;
}

export function registerRehearseCommand(
  program: Command,
  ctx: CommandContext,
  runCli: RehearsalOptions['runCli'],
): void {
  program
    .command('rehearse')
    .description(
      'rehearse going live on a fresh local anvil with a public chain id and a remote signer: configure, deploy, deposit, webhook, withdraw, stuck transaction',
    )
    .option(
      '--chain-id <id>',
      "a public chain's id, which the node is started with",
      publicChainId,
      DEFAULT_REHEARSAL.chainId,
    )
    .option(
      '--block-ms <ms>',
      'one block every this many milliseconds',
      integerInRange(100, 10_000),
      DEFAULT_REHEARSAL.blockMs,
    )
    .option(
      '--step-timeout <seconds>',
      'longest wait of one step',
      integerInRange(5, 3600),
      DEFAULT_REHEARSAL.stepTimeoutMs / 1000,
    )
    .option('--show-log', "print the service's warning and error lines at the end", false)
    .action(
      async (opts: { chainId: number; blockMs: number; stepTimeout: number; showLog: boolean }) => {
        const controller = new AbortController();
        const interrupt = () => controller.abort();
        process.once('SIGINT', interrupt);
        process.once('SIGTERM', interrupt);
        try {
          const { ok } = await runRehearsal(
            {
              chainId: opts.chainId,
              blockMs: opts.blockMs,
              stepTimeoutMs: opts.stepTimeout * 1000,
              showLog: opts.showLog,
              signal: controller.signal,
              runCli,
            },
            ctx.io.stdout,
          );
          if (!ok) throw new CommandError('the rehearsal failed (see above)', 'rehearsal_failed');
        } finally {
          process.off('SIGINT', interrupt);
          process.off('SIGTERM', interrupt);
        }
      },
    );
}
