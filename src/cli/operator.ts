/**
 * What an operator command that calls an engine needs: the chains of its products, reached where
 * the service runs them, and one way to run the call — with the database, the chains stopped
 * afterwards, and the domain's refusals (an invalid move, a failed transaction) printed as one line.
 * The product commands (pause, resume, deprecate) and the fee commands share it.
 */
import type { ChainSettings } from '../chain/chains.ts';
import { type ChainClient, createChainClient } from '../chain/client.ts';
import { ensureLocalChain, type LocalChain } from '../chain/local/ensure.ts';
import { OperatorError } from '../chain/send-engine-call.ts';
import type { Config } from '../config.ts';
import { createLogger } from '../logger.ts';
import { configuredChains, localChainSettings } from '../sync/chain-runtime.ts';
import { InvalidMoveError, type OperatorContext } from '../sync/lifecycle/operator-commands.ts';
import { type CommandContext, CommandError } from './shared.ts';

async function rpcAnswers(url: string): Promise<boolean> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    signal: AbortSignal.timeout(1_000),
  }).then(
    (r) => r.ok,
    () => false,
  );
}

/**
 * Chains for an operator call. The local chain is reached where the service runs it; when it is
 * not running (the embedded database requires the service to be stopped), the saved chain is
 * loaded for the command and saved again on exit.
 */
function operatorChains(config: Config): OperatorContext['chainFor'] & { stop(): Promise<void> } {
  let started: LocalChain | undefined;
  const resolved = new Map<number, { chain: ChainSettings; client: ChainClient }>();
  const chainFor = async (chainId: number) => {
    const hit = resolved.get(chainId);
    if (hit) return hit;
    const { chains, local } = configuredChains(config);
    let chain = chains.find((c) => c.chainId === chainId);
    if (!chain) throw new CommandError(`chain ${chainId} is not configured`, 'unknown_chain');
    if (!config.CHAINS_FILE) {
      if (!local) {
        throw new CommandError(
          'the local chain was never built: start the service once (npm start)',
          'no_chain',
        );
      }
      if (!(await rpcAnswers(local.rpcUrl))) {
        started = await ensureLocalChain({
          dataDir: config.DATA_DIR,
          seed: local.seed,
          days: local.days,
          port: 0,
        });
        chain = localChainSettings(started.anvil.rpcUrl, local.chainId);
      }
    }
    const entry = { chain, client: createChainClient(chain) };
    resolved.set(chainId, entry);
    return entry;
  };
  return Object.assign(chainFor, { stop: async () => started?.stop() });
}

/** Runs `read` with a client of chain `chainId`, reached as operator calls reach it. */
export async function withOperatorChain<T>(
  config: Config,
  chainId: number,
  read: (client: ChainClient) => Promise<T>,
): Promise<T> {
  const chainFor = operatorChains(config);
  try {
    const { client } = await chainFor(chainId);
    return await read(client);
  } finally {
    await chainFor.stop();
  }
}

/** Runs an engine call of an operator command; its refusals become one-line command errors. */
export async function runOperatorCall<T>(
  ctx: CommandContext,
  call: (operator: OperatorContext) => Promise<T>,
): Promise<T> {
  const config = ctx.config();
  const chainFor = operatorChains(config);
  try {
    // Replacements of a stuck transaction and failures reach the operator on stderr.
    const logger = createLogger('warn', {
      write: (line: string) => ctx.io.stderr.write(line),
    } as never);
    return await ctx.withDatabase(config, (db) => call({ db, chainFor, logger }));
  } catch (err) {
    if (err instanceof InvalidMoveError || err instanceof OperatorError) {
      throw new CommandError(err.message, err instanceof InvalidMoveError ? err.code : 'chain');
    }
    throw err;
  } finally {
    await chainFor.stop();
  }
}
