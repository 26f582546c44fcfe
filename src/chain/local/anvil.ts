/**
 * Starts and stops an anvil node (the npm package `@foundry-rs/anvil`) on 127.0.0.1. The native
 * binary is spawned directly (not the package's node wrapper) so that stop() signals anvil itself.
 * Port 0 lets the OS choose a free port; the real port is read from anvil's "Listening on" line, so
 * parallel test files never race for a port.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { saveState } from './save-state.ts';
import { unsavedChain } from './saving.ts';

export interface StartAnvilOptions {
  /** TCP port; 0 or absent picks a free one. */
  port?: number;
  /**
   * Load the chain from this file if it exists, and save it there on stop (`anvil_dumpState`,
   * written to a temporary file and renamed, so a stop cut short never leaves half a state).
   */
  stateFile?: string;
  /** Timestamp (seconds) of the genesis block; fixes every block time for reproducible chains. */
  genesisTimestamp?: number;
  chainId?: number;
  /** Number of funded dev accounts from the default mnemonic (default 20). */
  accounts?: number;
  /** More anvil flags (e.g. `--mnemonic-random` for a signer process whose keys nothing else has). */
  extraArgs?: string[];
}

export interface AnvilHandle {
  rpcUrl: string;
  port: number;
  chainId: number;
  /**
   * Saves `stateFile` (when given), then stops anvil (SIGTERM) and waits for it to exit.
   * `historicalStates: false` saves the current state, blocks and receipts only: reads at blocks
   * before the next load then fail (BlockOutOfRange), but the write is bounded by the chain's
   * transactions instead of growing with a full state per block (200 days: 106 MB in 1 s instead
   * of 531 MB in 6.5 s). Default true: whoever stops the chain says when the past is not needed.
   */
  stop(options?: { historicalStates?: boolean; discard?: boolean }): Promise<void>;
}

export const DEFAULT_CHAIN_ID = 31337;
/** Enough block history kept on disk for a year of daily reads at historic blocks. */
const MAX_PERSISTED_STATES = 20_000;

const require = createRequire(import.meta.url);

/**
 * Anvil nodes this process started and has not seen exit. When the process exits without stopping
 * them (a hard exit at the shutdown timeout, an uncaught error) they are killed with it: a chain
 * must never outlive its service (#30).
 */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Path of the platform binary shipped inside `@foundry-rs/anvil-<platform>-<arch>`. */
export function anvilBinary(): string {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const dir = path.dirname(require.resolve(`${pkg}/package.json`));
  const bin = path.join(dir, 'bin', exe);
  if (!existsSync(bin)) throw new Error(`anvil binary not found at ${bin}`);
  return bin;
}

export async function startAnvil(options: StartAnvilOptions = {}): Promise<AnvilHandle> {
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    String(options.port ?? 0),
    '--chain-id',
    String(chainId),
    '--accounts',
    String(options.accounts ?? 20),
    '--balance',
    '1000000',
    // Room for a whole simulated day (dozens of transactions) in one block.
    '--gas-limit',
    '1000000000',
    // Mined blocks keep the order in which transactions were sent: reproducible history.
    '--order',
    'fifo',
    '--max-persisted-states',
    String(MAX_PERSISTED_STATES),
  ];
  if (options.genesisTimestamp !== undefined)
    args.push('--timestamp', String(options.genesisTimestamp));
  // Loading restores whatever historical states the file holds; saving is stop()'s (saveState).
  if (options.stateFile && existsSync(options.stateFile))
    args.push('--load-state', options.stateFile);
  if (options.extraArgs) args.push(...options.extraArgs);

  // Its own process group: a Ctrl-C in the terminal (SIGINT to the whole foreground group) reaches
  // the service, which saves the chain and then stops it; anvil killed first would lose the state.
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child);
  // Until stop() has saved it, the service's hard exit waits for it (saving.ts).
  const saved = options.stateFile ? unsavedChain() : () => {};
  child.once('exit', () => {
    running.delete(child);
    saved();
  });
  const port = await waitForListening(child, options.port ?? 0);
  let exited: Promise<void> | undefined;
  const exitPromise = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    port,
    chainId,
    stop(stopOptions = {}) {
      exited ??= (async () => {
        const alive = child.exitCode === null && child.signalCode === null;
        let saveError: unknown;
        // `discard`: a chain given up (a first build stopped half-way) is not worth its write.
        if (alive && options.stateFile && !stopOptions.discard) {
          await saveState(`http://127.0.0.1:${port}`, options.stateFile, {
            historicalStates: stopOptions.historicalStates ?? true,
          }).catch((err: unknown) => {
            saveError = err;
          });
        }
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exitPromise;
        clearTimeout(timer);
        if (saveError) throw saveError;
      })();
      return exited;
    },
  };
}

function waitForListening(child: ChildProcess, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`anvil did not start within 60 s\n${out}${err}`));
    }, 60_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Listening on [^\s:]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        // Keep draining output so anvil never blocks on a full pipe.
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve(Number(m[1]));
      } else if (out.length > 1_000_000) out = out.slice(-10_000);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      // The usual cause on a developer's machine: another service's local chain on the port.
      if (/address already in use/i.test(err + out)) {
        reject(
          new Error(
            `the local chain's port ${port} is in use (another service's local chain?): set LOCAL_CHAIN_PORT to a free port, or 0 to pick one`,
          ),
        );
        return;
      }
      reject(new Error(`anvil exited with code ${code}\n${err || out}`));
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
