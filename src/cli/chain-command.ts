/**
 * `yield-service chain`: runs the embedded local chain (anvil with the demo deployment and its
 * simulated history) in the foreground, printing the RPC URL and every address, until SIGINT/SIGTERM.
 * State persists under `<data-dir>/chain/`, so the next run reloads the same chain in seconds.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_DAYS, DEFAULT_SEED } from '../chain/local/build.ts';
import type { LocalDeployment } from '../chain/local/deployment.ts';
import { ensureLocalChain } from '../chain/local/ensure.ts';
import { integerInRange } from './arguments.ts';

interface ChainCommandOptions {
  days: number;
  seed: string;
  port: number;
  dataDir: string;
  genesisTimestamp?: number;
  fresh: boolean;
}

export function describeDeployment(d: LocalDeployment): string {
  const lines = [
    `RPC URL        ${d.rpcUrl}`,
    `chain id       ${d.chainId}`,
    `seed / days    ${d.seed} / ${d.days} (history ${new Date(d.historyStartTimestamp * 1000).toISOString().slice(0, 10)} .. ${new Date((d.historyEndTimestamp - 1) * 1000).toISOString().slice(0, 10)}, last history block ${d.historyEndBlock})`,
    `operator       ${d.operator}`,
    `service fees   ${d.serviceFeeRecipient}`,
    `asset          ${d.asset.address} (${d.asset.symbol}, ${d.asset.decimals} decimals)`,
    `sync vault     ${d.vaults.sync.address}`,
    `async vault    ${d.vaults.async.address}`,
    'engines:',
    ...Object.values(d.engines).map(
      (e) => `  ${e.slug.padEnd(24)} ${e.address}  ${e.vaultKind.padEnd(5)} ${e.status}`,
    ),
    'pending (not deployed):',
    ...Object.values(d.pending).map((p) => `  ${p.slug}`),
  ];
  return `${lines.join('\n')}\n`;
}

async function runChain(options: ChainCommandOptions): Promise<void> {
  const chain = await ensureLocalChain({
    dataDir: path.resolve(options.dataDir),
    seed: options.seed,
    days: options.days,
    port: options.port,
    genesisTimestamp: options.genesisTimestamp,
    fresh: options.fresh,
  });
  const t = chain.deployment.timings;
  process.stdout.write(describeDeployment(chain.deployment));
  process.stdout.write(
    chain.reloaded
      ? `Loaded the saved chain in ${chain.seconds} s.\n`
      : `Built the chain in ${chain.seconds} s (deploy ${t.deploySeconds} s, ${chain.deployment.days} days of history ${t.simulateSeconds} s: ${t.transactions} transactions in ${t.blocks} blocks).\n`,
  );
  process.stdout.write('Press Ctrl-C to stop (the chain state is saved on exit).\n');
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    chain.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

export function registerChainCommand(program: Command): void {
  program
    .command('chain')
    .description('run the local chain (anvil) with the demo contracts and simulated history')
    .option('--days <n>', 'days of simulated history', integerInRange(1, 3650), DEFAULT_DAYS)
    .option('--seed <seed>', 'seed of the simulated history', DEFAULT_SEED)
    .option('--port <port>', 'RPC port (0 picks a free one)', integerInRange(0, 65535), 8545)
    .option('--data-dir <dir>', 'where the chain state is kept', process.env.DATA_DIR ?? './data')
    .option(
      '--genesis-timestamp <seconds>',
      'fixed genesis time: every block time and hash becomes reproducible',
      integerInRange(1, 2 ** 40),
    )
    .option('--fresh', 'discard any saved chain and build a new one', false)
    .action(runChain);
}
