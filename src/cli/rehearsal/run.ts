/**
 * The rehearsal (`yield-service rehearse`, issue #29): the whole path of going live, on this
 * machine, against a fresh anvil started with a public chain's id (Base's 8453 by default) and a
 * remote signer, through the service's real code: the CHAINS_FILE parser and its refusals, the
 * worker (deployer, indexer, dispatcher, transaction follower) started as `yield-service start`
 * starts it, and the operator's commands run as the CLI runs them (`runCli`, on the same embedded
 * database). Each step prints one line: its number and name, ok or FAILED, elapsed time, and its key
 * figure. The first failure stops the run with what failed and what to do next.
 *
 * What stands in for the outside world:
 * - the chain: anvil with `--no-mining`, blocks made by startBlockProducer every `blockMs`, the
 *   canonical Multicall3 installed and the head moved past the block Base created it at;
 * - the signer: a second anvil started with a random mnemonic, so its key exists in that process
 *   only; it answers `eth_signTransaction` as Web3Signer or Clef do. Neither the chain node, nor
 *   the CHAINS_FILE, nor this process ever holds the key;
 * - the vault issuer and the end user: the chain node's unlocked dev accounts;
 * - the partner: an HTTPS receiver on loopback with a certificate made for the run.
 * Everything runs under one temporary directory, removed at the end with every process started.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import {
  type Address,
  encodeFunctionData,
  formatGwei,
  getAddress,
  type Hash,
  type Hex,
  parseEther,
  toHex,
} from 'viem';
import { ChainsFileError, parseChainsFile, readChainsFile } from '../../chain/chains.ts';
import {
  type ChainClient,
  createChainClient,
  createChainWallet,
  endpointOf,
  LOCAL_NODE_CLIENT,
} from '../../chain/client.ts';
import { deployContract } from '../../chain/deploy.ts';
import { testUSDAbi, testUSDBytecode } from '../../chain/generated/TestUSD.ts';
import { yieldEngineAbi } from '../../chain/generated/YieldEngine.ts';
import { yieldVaultAbi, yieldVaultBytecode } from '../../chain/generated/YieldVault.ts';
import { DEV_ADDRESSES } from '../../chain/local/accounts.ts';
import { type AnvilHandle, startAnvil } from '../../chain/local/anvil.ts';
import { aprBpsToRatePerSecond } from '../../chain/local/rates.ts';
import { createRpc, type RpcRequest } from '../../chain/local/rpc.ts';
import { findMulticall3, installMulticall3 } from '../../chain/multicall3.ts';
import { remoteSignerHolds } from '../../chain/remote-signer.ts';
import { loadConfig } from '../../config.ts';
import { type ChainTx, createChainTransactionsRepo } from '../../db/chain-transactions.ts';
import { createProductsRepo } from '../../db/products.ts';
import { createLogger } from '../../logger.ts';
import type { RunningService } from '../../main.ts';
import type { CliIo } from '../shared.ts';
import { type BlockProducer, startBlockProducer } from './blocks.ts';
import { startWebhookReceiver, type WebhookReceiver } from './receiver.ts';

export interface RehearsalOptions {
  /** The chain id the node is started with (a public chain's, so its rules apply). */
  chainId: number;
  /** One block every this many milliseconds. */
  blockMs: number;
  /** Longest wait of one step. */
  stepTimeoutMs: number;
  /** Print every warning and error line of the service and the commands at the end. */
  showLog?: boolean;
  /** Aborted on Ctrl-C: the step in progress stops and everything is cleaned up. */
  signal?: AbortSignal;
  /**
   * The CLI's own runner (src/cli/main.ts runCli), for the operator's commands: passed in by the
   * command rather than imported, so this module and the CLI's entry do not import each other.
   */
  runCli: (args: readonly string[], io: CliIo) => Promise<number>;
}

export const DEFAULT_REHEARSAL: Omit<RehearsalOptions, 'signal' | 'showLog' | 'runCli'> = {
  chainId: 8453,
  blockMs: 500,
  stepTimeoutMs: 60_000,
};

export interface StepResult {
  name: string;
  ok: boolean;
  ms: number;
  figure: string;
}

/** The steps, in order; the test checks every one is printed as passed. */
export const REHEARSAL_STEPS = [
  'chain node',
  'remote signer',
  'configure',
  'https receiver',
  'service',
  'underlying vault',
  'partner + webhook',
  'product',
  'deploy engine',
  'deposit',
  'deposit.confirmed',
  'withdraw',
  'redeem.confirmed',
  'stuck transaction',
  'later operations',
] as const;
type StepName = (typeof REHEARSAL_STEPS)[number];

/** What to do when a step fails: the likely cause first. */
const NEXT: Record<StepName, string> = {
  'chain node':
    'anvil (the npm package @foundry-rs/anvil) did not start: run `npx anvil --version`, and `npm ci` if it is missing',
  'remote signer':
    'the signer process (a second anvil) did not start or does not hold its account: see the line above',
  configure:
    'the CHAINS_FILE the rehearsal wrote was refused or the signer could not be funded: the message above names the field (see docs/maintainers/going-live.md, "The chain configuration")',
  'https receiver':
    'the receiver needs the openssl command line tool to make its certificate: install it (apt-get install openssl)',
  service:
    'the worker did not start on the rehearsal chain: the service log lines below say why (a configuration error names the setting)',
  'underlying vault': 'the mock stablecoin or vault did not deploy on the rehearsal node',
  'partner + webhook':
    'an operator command was refused: the message above is what `yield-service partner create` or `webhook add` printed',
  product: 'an operator command was refused: the message above is what `product create` printed',
  'deploy engine':
    'the worker did not deploy the engine through the remote signer: look for the deployer in the service log lines below (signer refused, out of gas, not final)',
  deposit: 'the end user could not deposit on the engine: check the engine and the vault above',
  'deposit.confirmed':
    'the indexer or the dispatcher did not deliver the event: the service log lines below show a refused destination (WEBHOOK_ALLOWED_CIDRS, WEBHOOK_CA_FILE) or a failing receiver',
  withdraw: 'the end user could not redeem their shares',
  'redeem.confirmed':
    'the withdrawal was not delivered as redeem.confirmed: see the service log lines below',
  'stuck transaction':
    'the stuck transaction was not replaced and mined: check replace_after_blocks and max_fee_per_gas_gwei in the CHAINS_FILE, and the service log lines below',
  'later operations':
    'an operator transaction sent behind the stuck one did not go through in nonce order: run again with --show-log for the transaction follower\'s lines, and see docs/maintainers/operations.md, "The signer\'s transactions"',
};

export class RehearsalAborted extends Error {
  override name = 'RehearsalAborted';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const short = (h: string) => `${h.slice(0, 10)}…${h.slice(-4)}`;

/** Keeps the service's log lines (warn and up) to show after a failure. */
function logCollector() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim()) lines.push(line);
      }
      if (lines.length > 400) lines.splice(0, lines.length - 400);
      done();
    },
  });
  return { stream, lines };
}

/** The warnings and errors of the service and of the operator commands, counted by message. */
function logSummary(lines: readonly string[]): string {
  const counts = new Map<string, number>();
  let warnings = 0;
  let errors = 0;
  for (const l of lines) {
    let entry: { level?: number; msg?: string };
    try {
      entry = JSON.parse(l) as { level?: number; msg?: string };
    } catch {
      continue;
    }
    if ((entry.level ?? 0) >= 50) errors++;
    else if ((entry.level ?? 0) >= 40) warnings++;
    else continue;
    const msg = entry.msg ?? '(no message)';
    counts.set(msg, (counts.get(msg) ?? 0) + 1);
  }
  const which = [...counts].map(([m, n]) => `"${m}" x${n}`).join(', ');
  return `Service log: ${warnings} warning(s), ${errors} error(s)${which ? `: ${which}` : ''}`;
}

function signatureValid(secret: string, body: Buffer, header: unknown): boolean {
  if (typeof header !== 'string' || !/^[0-9a-f]{64}$/.test(header)) return false;
  return timingSafeEqual(
    createHmac('sha256', secret).update(body).digest(),
    Buffer.from(header, 'hex'),
  );
}

/**
 * Runs the rehearsal, writing one line per step to `out`; answers whether every step passed.
 * Everything started is stopped and the temporary directory removed before it returns, whatever
 * happened.
 */
export async function runRehearsal(
  options: RehearsalOptions,
  out: { write(text: string): unknown },
): Promise<{ ok: boolean; steps: StepResult[] }> {
  const { chainId, blockMs, stepTimeoutMs, signal } = options;
  const print = (text: string) => out.write(`${text}\n`);
  const steps: StepResult[] = [];
  const cleanups: Array<{ what: string; fn: () => Promise<unknown> | unknown }> = [];
  let cleanedUp = false;
  /**
   * What to stop at the end. Something started by a step that already ended (interrupted while
   * the service was starting, say) arrives after the cleanup ran: it is stopped at once.
   */
  const onCleanup = (what: string, fn: () => Promise<unknown> | unknown) => {
    if (!cleanedUp) cleanups.push({ what, fn });
    else
      Promise.resolve()
        .then(fn)
        .catch(() => {});
  };
  const logs = logCollector();
  const started = Date.now();

  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(new RehearsalAborted('interrupted (Ctrl-C)'));
    if (signal?.aborted) fail();
    else signal?.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => {});

  const width = Math.max(...REHEARSAL_STEPS.map((s) => s.length));
  const line = (i: number, name: string, status: string, ms: number | undefined, figure: string) =>
    `${String(i).padStart(2)}  ${name.padEnd(width)}  ${status.padEnd(6)}  ${
      ms === undefined ? ''.padStart(8) : `${ms} ms`.padStart(8)
    }  ${figure}`;

  /** Set when the step in progress ended (timed out, say): its polling loops stop too. */
  let stepOver = false;

  async function step(name: StepName, fn: () => Promise<string>): Promise<void> {
    const i = steps.length + 1;
    stepOver = false;
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`did not finish within ${stepTimeoutMs / 1000} s`)),
        stepTimeoutMs,
      );
    });
    try {
      const figure = await Promise.race([fn(), timeout, aborted]);
      const ms = Date.now() - t0;
      steps.push({ name, ok: true, ms, figure });
      print(line(i, name, 'ok', ms, figure));
    } catch (err) {
      const ms = Date.now() - t0;
      const message = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
      steps.push({ name, ok: false, ms, figure: message });
      print(line(i, name, err instanceof RehearsalAborted ? 'stop' : 'FAILED', ms, message));
      throw Object.assign(err instanceof Error ? err : new Error(message), { step: name });
    } finally {
      stepOver = true;
      clearTimeout(timer);
    }
  }

  /** Polls `probe` until it answers something (or the step's timeout/abort ends the step). */
  async function until<T>(probe: () => Promise<T | undefined>, everyMs = 100): Promise<T> {
    for (;;) {
      if (signal?.aborted) throw new RehearsalAborted('interrupted (Ctrl-C)');
      if (stepOver) throw new Error('the step ended');
      const v = await probe();
      if (v !== undefined) return v;
      await sleep(everyMs);
    }
  }

  const dir = mkdtempSync(path.join(tmpdir(), 'yield-rehearsal-'));
  onCleanup('temporary directory', () => rmSync(dir, { recursive: true, force: true }));

  print(
    `Rehearsal on a fresh anvil with chain id ${chainId} and a remote signer (one block every ${blockMs} ms)`,
  );
  let failedStep: string | undefined;
  let failure: unknown;
  try {
    // -- the chain -------------------------------------------------------------------------------
    let node: AnvilHandle;
    let rpc: RpcRequest;
    let client: ChainClient;
    let blocks: BlockProducer;
    await step('chain node', async () => {
      node = await startAnvil({ chainId, accounts: 10, extraArgs: ['--no-mining'] });
      onCleanup('chain node', () => node.stop());
      rpc = createRpc(node.rpcUrl);
      client = createChainClient(endpointOf(node.rpcUrl, chainId), LOCAL_NODE_CLIENT);
      // The public networks have Multicall3 at its canonical address; the service finds it there
      // at start. Its creation block on this network (Base: 5,022) is past this young chain's
      // head, so reads at a given block go one call each, as the service reads blocks older than
      // the contract (the head's reads gather into it).
      await installMulticall3(rpc);
      const created = (await findMulticall3(client, chainId))?.blockCreated ?? 0;
      blocks = startBlockProducer(rpc, blockMs);
      onCleanup('block producer', () => blocks.stop());
      const head = await client.getBlockNumber({ cacheTime: 0 });
      const id = await client.getChainId();
      if (id !== chainId) throw new Error(`the node answers chain id ${id}, not ${chainId}`);
      return `anvil, chain id ${id}, head ${head}, Multicall3 at its canonical address${
        created > 0 ? ` (created at block ${created} on this network)` : ''
      }`;
    });

    // -- the remote signer -----------------------------------------------------------------------
    let signerUrl = '';
    let signer: Address = '0x';
    await step('remote signer', async () => {
      const signerNode = await startAnvil({
        chainId,
        accounts: 1,
        extraArgs: ['--mnemonic-random', '--no-mining'],
      });
      onCleanup('remote signer', () => signerNode.stop());
      signerUrl = signerNode.rpcUrl;
      const accounts = (await createRpc(signerUrl)('eth_accounts', [])) as string[];
      signer = getAddress(accounts[0]!);
      if (!(await remoteSignerHolds(signerUrl, signer))) {
        throw new Error(`the signer does not answer for ${signer}`);
      }
      return `eth_signTransaction on loopback for ${signer} (its key exists in the signer process only)`;
    });

    // -- configuration ---------------------------------------------------------------------------
    const chainsFile = path.join(dir, 'chains.json');
    const maxFeeGwei = '50';
    const replaceAfterBlocks = 3;
    const confirmationDepth = 3;
    await step('configure', async () => {
      const entry = {
        chain_id: chainId,
        name: `rehearsal (chain ${chainId})`,
        rpc_urls: [node.rpcUrl],
        confirmation_depth: confirmationDepth,
        block_range_limit: 2000,
        signer: { url: signerUrl, address: signer },
        max_fee_per_gas_gwei: maxFeeGwei,
        replace_after_blocks: replaceAfterBlocks,
      };
      writeFileSync(chainsFile, `${JSON.stringify([entry], null, 2)}\n`, { mode: 0o600 });
      // The service's own parser, as `start` reads it.
      const [chain] = readChainsFile(chainsFile);
      if (chain?.signer?.kind !== 'remote' || chain.deployerPrivateKey) {
        throw new Error('the CHAINS_FILE was not read as a remote signer without a key');
      }
      // The rule that makes the remote signer necessary: a plaintext key for this chain id is
      // refused (a throwaway value of a key's shape; nothing signs with it).
      const throwaway = `0x${randomBytes(32).toString('hex')}`;
      let refused = false;
      try {
        parseChainsFile(
          JSON.stringify([{ ...entry, signer: undefined, deployer_private_key: throwaway }]),
        );
      } catch (err) {
        refused = err instanceof ChainsFileError && /plaintext key is refused/.test(err.message);
      }
      if (!refused) throw new Error(`a plaintext key was accepted for chain ${chainId}`);
      // Fund the signer as an operator would: a transfer from another account.
      const hash = (await rpc('eth_sendTransaction', [
        { from: DEV_ADDRESSES[0], to: signer, value: toHex(parseEther('1')) },
      ])) as Hash;
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
      return `CHAINS_FILE with signer {url, address}, depth ${confirmationDepth}, replace after ${replaceAfterBlocks} blocks, cap ${maxFeeGwei} gwei; plaintext key refused for chain ${chainId}; signer funded 1 ETH (${short(hash)}, block ${receipt.blockNumber})`;
    });

    let receiver: WebhookReceiver;
    await step('https receiver', async () => {
      receiver = await startWebhookReceiver(dir);
      onCleanup('https receiver', () => receiver.close());
      return `${receiver.url}, self-signed certificate given to the service as WEBHOOK_CA_FILE`;
    });

    // -- the service -----------------------------------------------------------------------------
    const dataDir = path.join(dir, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const env: NodeJS.ProcessEnv = {
      ROLES: 'worker',
      DATA_DIR: dataDir,
      CHAINS_FILE: chainsFile,
      // A public chain's id and the worker alone: a live-looking setup, on a temporary embedded
      // database on purpose (start refuses it otherwise; src/main.ts).
      ALLOW_EMBEDDED_DATABASE: 'true',
      MASTER_KEY: randomBytes(32).toString('hex'),
      CHAIN_POLL_INTERVAL_MS: String(Math.max(100, blockMs)),
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
      WEBHOOK_CA_FILE: receiver!.caFile,
      SHUTDOWN_TIMEOUT_MS: '10000',
      LOG_LEVEL: 'warn',
      DEMO: 'false',
    };
    let service: RunningService;
    await step('service', async () => {
      const config = loadConfig(env);
      const { startService } = await import('../../main.ts');
      service = await startService(config, createLogger(config.LOG_LEVEL, logs.stream));
      onCleanup('service', () => service.stop());
      const ready = await service.ready;
      return `worker role (deployer, indexer, webhooks, transaction follower) on embedded PGlite, chains [${ready.chains.map((c) => c.chainId).join(', ')}]`;
    });

    /** An operator command, run as the bin runs it, on the service's database. */
    async function cli(args: string[]): Promise<string> {
      const { runCli } = options;
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: (t: string) => (stderr += t) },
        env,
        database: service.db,
      });
      // Its warnings (a replacement made while the command waited) join the service's.
      for (const l of stderr.split('\n')) if (l.trim().startsWith('{')) logs.lines.push(l);
      if (code !== 0) {
        const said = stderr.trim().split('\n').filter(Boolean).pop() ?? `exit code ${code}`;
        throw new Error(`yield-service ${args.slice(0, 2).join(' ')}: ${said}`);
      }
      return stdout;
    }

    // -- the world outside: a stablecoin and an ERC-4626 vault -----------------------------------
    const issuer = DEV_ADDRESSES[0] as Address;
    const user = DEV_ADDRESSES[4] as Address;
    const wallet = createChainWallet(endpointOf(node!.rpcUrl, chainId), issuer, LOCAL_NODE_CLIENT);
    let asset: Address = '0x';
    let vault: Address = '0x';
    /** Sends from an unlocked account of the node and waits for a successful receipt. */
    async function send(from: Address, to: Address, data: Hex) {
      const hash = (await rpc!('eth_sendTransaction', [
        { from, to, data, gas: toHex(3_000_000) },
      ])) as Hash;
      const receipt = await client!.waitForTransactionReceipt({ hash, pollingInterval: 100 });
      if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
      return receipt;
    }
    await step('underlying vault', async () => {
      asset = (await deployContract(wallet, client!, testUSDAbi, testUSDBytecode, [issuer]))
        .address;
      vault = (
        await deployContract(wallet, client!, yieldVaultAbi, yieldVaultBytecode, [
          asset,
          'Rehearsal Vault',
          'rvUSD',
          issuer,
          aprBpsToRatePerSecond(500),
        ])
      ).address;
      await send(
        issuer,
        asset,
        encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [vault, true] }),
      );
      return `stablecoin ${asset} (6 decimals), ERC-4626 vault ${vault} (5 % APR)`;
    });

    // -- the operator: partner, destination, product ---------------------------------------------
    const partnerName = 'Rehearsal Wallet';
    const slug = 'rehearsal-usdc';
    let secret = '';
    await step('partner + webhook', async () => {
      const partner = JSON.parse(
        await cli(['partner', 'create', '--name', partnerName, '--json']),
      ) as {
        id: string;
      };
      const added = JSON.parse(
        await cli([
          'webhook',
          'add',
          '--partner',
          partnerName,
          '--env',
          'live',
          '--url',
          receiver!.url,
          '--events',
          'deposit.confirmed,redeem.confirmed',
          '--json',
        ]),
      ) as { id: string; secret: string };
      secret = added.secret;
      if (!/^whsec_/.test(secret)) throw new Error('webhook add printed no signing secret');
      return `partner ${partner.id}, destination ${added.id} (deposit.confirmed, redeem.confirmed)`;
    });

    await step('product', async () => {
      const created = JSON.parse(
        await cli([
          'product',
          'create',
          '--partner',
          partnerName,
          '--env',
          'live',
          '--slug',
          slug,
          '--display-name',
          'Rehearsal USDC',
          '--risk',
          'low',
          '--chain-id',
          String(chainId),
          '--vault-kind',
          'sync',
          '--underlying',
          vault,
          '--asset',
          asset,
          '--asset-symbol',
          'TUSD',
          '--asset-decimals',
          '6',
          '--service-fee-bps',
          '500',
          '--partner-fee-bps',
          '1000',
          '--service-recipient',
          DEV_ADDRESSES[1],
          '--partner-recipient',
          DEV_ADDRESSES[2],
          '--hold',
          '--json',
        ]),
      ) as { status: string };
      if (created.status !== 'pending_deploy') {
        throw new Error(`product create left it ${created.status}, not pending_deploy`);
      }
      await cli(['product', 'release', slug]);
      return `${slug} created pending_deploy with --hold, then released to the worker`;
    });

    const products = createProductsRepo(service!.db);
    let engine: Address = '0x';
    await step('deploy engine', async () => {
      const p = await until(async () => {
        const row = await products.getBySlug(slug);
        return row?.status === 'active' ? row : undefined;
      }, 200);
      engine = getAddress(p.engineAddress!);
      const receipt = await client!.getTransactionReceipt({ hash: p.deployTxHash! });
      if (getAddress(receipt.from) !== signer) {
        throw new Error(`the engine was deployed by ${receipt.from}, not the signer ${signer}`);
      }
      const owner = await client!.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'owner',
      });
      if (getAddress(owner) !== signer) throw new Error(`the engine is owned by ${owner}`);
      return `engine ${engine} by the remote signer, tx ${short(p.deployTxHash!)}, block ${receipt.blockNumber}, active after ${confirmationDepth} confirmations`;
    });

    // -- the end user ----------------------------------------------------------------------------
    const amount = 250_000_000n; // 250 TUSD
    let depositTx: Hash = '0x';
    let depositBlock = 0n;
    let depositMinedAt = 0;
    /** What the first deposit locks in seed shares (docs/engine.md, "The seed"): not paid back. */
    let seedPaid = 0n;
    await step('deposit', async () => {
      const seeded = await client!.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'seeded',
      });
      if (!seeded) {
        seedPaid = await client!.readContract({
          address: engine,
          abi: yieldEngineAbi,
          functionName: 'SEED_ASSETS',
        });
      }
      await send(
        issuer,
        asset,
        encodeFunctionData({ abi: testUSDAbi, functionName: 'mint', args: [user, amount * 4n] }),
      );
      await send(
        user,
        asset,
        encodeFunctionData({ abi: testUSDAbi, functionName: 'approve', args: [engine, amount] }),
      );
      const receipt = await send(
        user,
        engine,
        encodeFunctionData({ abi: yieldEngineAbi, functionName: 'deposit', args: [amount, user] }),
      );
      depositMinedAt = Date.now();
      depositTx = receipt.transactionHash;
      depositBlock = receipt.blockNumber;
      const seed = seedPaid > 0n ? ` (the engine's first: ${seedPaid} locked in seed shares)` : '';
      return `${amount} base units by ${user}${seed}, tx ${short(depositTx)}, block ${depositBlock}`;
    });

    /** Waits for `event` about `tx` at the receiver; checks its signature and payload. */
    async function delivered(event: string, tx: Hash, minedAt: number) {
      const got = await until(async () =>
        receiver!.received.find(
          (r) =>
            r.headers['x-service-event'] === event &&
            (JSON.parse(r.body.toString('utf8')) as { tx_hash?: string }).tx_hash === tx,
        ),
      );
      if (!signatureValid(secret, got.body, got.headers['x-service-signature'])) {
        throw new Error(`${event} arrived with a signature that does not verify`);
      }
      const payload = JSON.parse(got.body.toString('utf8')) as Record<string, unknown>;
      if (payload.slug !== slug || payload.chain_id !== chainId) {
        throw new Error(
          `${event} names ${String(payload.slug)} on chain ${String(payload.chain_id)}`,
        );
      }
      return { payload, afterMs: got.receivedAt - minedAt };
    }

    await step('deposit.confirmed', async () => {
      const { payload, afterMs } = await delivered('deposit.confirmed', depositTx, depositMinedAt);
      if (payload.amount !== '250' || payload.block_number !== Number(depositBlock)) {
        throw new Error(
          `unexpected payload: amount ${String(payload.amount)}, block ${String(payload.block_number)}`,
        );
      }
      return `over HTTPS, signature valid, amount "${payload.amount}", block ${payload.block_number}, ${afterMs} ms after mining`;
    });

    let withdrawTx: Hash = '0x';
    let withdrawMinedAt = 0;
    await step('withdraw', async () => {
      const shares = await client!.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'balanceOf',
        args: [user],
      });
      const before = await client!.readContract({
        address: asset,
        abi: testUSDAbi,
        functionName: 'balanceOf',
        args: [user],
      });
      const receipt = await send(
        user,
        engine,
        encodeFunctionData({
          abi: yieldEngineAbi,
          functionName: 'redeem',
          args: [shares, user, user],
        }),
      );
      withdrawMinedAt = Date.now();
      withdrawTx = receipt.transactionHash;
      const after = await client!.readContract({
        address: asset,
        abi: testUSDAbi,
        functionName: 'balanceOf',
        args: [user],
        blockNumber: receipt.blockNumber,
      });
      const back = after - before;
      if (back < amount - seedPaid - 1n) {
        throw new Error(
          `the user got ${back} base units back for ${amount} (${seedPaid} of them locked in seed shares)`,
        );
      }
      return `${shares} share base units redeemed for ${back} base units, tx ${short(withdrawTx)}, block ${receipt.blockNumber}`;
    });

    await step('redeem.confirmed', async () => {
      const { payload, afterMs } = await delivered('redeem.confirmed', withdrawTx, withdrawMinedAt);
      return `over HTTPS, signature valid, amount "${String(payload.amount)}", ${afterMs} ms after mining`;
    });

    // -- a stuck operator transaction ------------------------------------------------------------
    const txs = createChainTransactionsRepo(service!.db);
    let stuck: ChainTx | undefined;
    let later: Promise<string> | undefined;
    await step('stuck transaction', async () => {
      // Hold the blocks, put a fee change in the pool priced for today's base fee, then make the
      // next blocks' base fee far above it: a fee spike right after the send.
      await blocks!.hold();
      const setFees = cli([
        'product',
        'set-fees',
        slug,
        '--service-fee-bps',
        '400',
        '--partner-fee-bps',
        '1000',
        '--json',
      ]);
      setFees.catch(() => {});
      const first = await Promise.race([
        setFees.then(() => {
          throw new Error('set-fees finished before its transaction could be held');
        }),
        until(async () =>
          (await txs.pending(chainId)).find((t) => t.purpose.startsWith('set fees ')),
        ),
      ]);
      const spike = first.maxFeePerGas * 8n;
      await rpc!('anvil_setNextBlockBaseFeePerGas', [toHex(spike)]);
      blocks!.resume();
      // Stuck: a block at the spiked base fee was mined without it.
      await until(async () => {
        const head = await client!.getBlock({ blockTag: 'latest' });
        return head.number > first.sentBlock && (head.baseFeePerGas ?? 0n) > first.maxFeePerGas
          ? head
          : undefined;
      });
      if ((await txs.get(first.id))?.status !== 'pending') {
        throw new Error('the transaction was mined under a base fee above its max fee');
      }
      // A later operation while it is stuck: the next nonce, waiting behind it.
      later = cli(['product', 'pause', slug, '--json']);
      later.catch(() => {});
      const out = JSON.parse(await setFees) as { tx_hash?: string };
      stuck = await txs.get(first.id);
      if (stuck?.status !== 'mined') throw new Error(`set-fees ended ${stuck?.status}`);
      if (stuck.attempts < 2 || stuck.minedTxHash === first.txHash) {
        throw new Error('the transaction was mined without a replacement');
      }
      const replacedLine = `transaction not mined after ${replaceAfterBlocks} blocks: replaced with higher fees`;
      if (!logs.lines.some((l) => l.includes(replacedLine))) {
        throw new Error('the replacement was not logged by the service');
      }
      if (out.tx_hash && out.tx_hash.toLowerCase() !== stuck.minedTxHash?.toLowerCase()) {
        throw new Error(`set-fees reported ${out.tx_hash}, the row says ${stuck.minedTxHash}`);
      }
      return `set-fees nonce ${first.nonce} sent at max fee ${formatGwei(first.maxFeePerGas)} gwei (${short(first.txHash)}); base fee raised to ${formatGwei(spike)} gwei; replaced after ${replaceAfterBlocks} blocks at ${formatGwei(stuck.maxFeePerGas)} gwei (attempt ${stuck.attempts}, ${short(stuck.minedTxHash!)}), mined in block ${stuck.blockNumber}`;
    });

    await step('later operations', async () => {
      await later;
      const all = await txs.list({ chainId, limit: 10 });
      const pause = all.find((t) => t.purpose === `pause ${slug}` && t.nonce === stuck!.nonce + 1);
      if (pause?.status !== 'mined') {
        throw new Error(
          `the pause sent behind nonce ${stuck!.nonce} is ${pause?.status ?? 'missing'}`,
        );
      }
      if (pause.blockNumber! < stuck!.blockNumber!) {
        throw new Error('the later operation was mined before the stuck one');
      }
      await cli(['product', 'resume', slug, '--json']);
      const resume = (await txs.list({ chainId, limit: 10 })).find(
        (t) => t.purpose === `resume ${slug}` && t.nonce === pause.nonce + 1,
      );
      if (resume?.status !== 'mined')
        throw new Error(`the resume is ${resume?.status ?? 'missing'}`);
      const paused = await client!.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'paused',
      });
      if (paused) throw new Error('the engine is still paused after resume');
      const pending = await txs.pending(chainId);
      if (pending.length > 0) throw new Error(`${pending.length} transaction(s) still pending`);
      const waited =
        pause.attempts > 1 ? `, itself replaced while it waited: attempt ${pause.attempts}` : '';
      return `pause (nonce ${pause.nonce}, sent while it was stuck${waited}) mined in block ${pause.blockNumber}, then resume (nonce ${resume.nonce}) in block ${resume.blockNumber}; none pending`;
    });
  } catch (err) {
    failure = err;
    failedStep = (err as { step?: string }).step;
  } finally {
    cleanedUp = true;
    for (const c of cleanups.splice(0).reverse()) {
      try {
        await c.fn();
      } catch (err) {
        print(`cleanup: stopping the ${c.what} failed: ${(err as Error).message}`);
      }
    }
  }

  const ok = failure === undefined && steps.length === REHEARSAL_STEPS.length;
  if (options.showLog) for (const l of logs.lines) print(l);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (ok) {
    print(logSummary(logs.lines));
    print(
      `All ${steps.length} steps passed in ${seconds} s; every process stopped and the temporary directory removed.`,
    );
    return { ok, steps };
  }
  for (let i = steps.length; i < REHEARSAL_STEPS.length; i++) {
    print(line(i + 1, REHEARSAL_STEPS[i]!, 'skip', undefined, ''));
  }
  print(logSummary(logs.lines));
  const what = failedStep ?? 'setup';
  print('');
  if (failure instanceof RehearsalAborted) {
    print(`Rehearsal stopped at "${what}" after ${seconds} s (Ctrl-C).`);
    print('Every process it started was stopped and the temporary directory removed.');
  } else {
    print(
      `Rehearsal FAILED at "${what}" after ${seconds} s: ${(failure as Error)?.message ?? 'unknown error'}`,
    );
    const next = NEXT[what as StepName];
    if (next) print(`What to do next: ${next}.`);
    const recent = logs.lines.slice(-12);
    if (recent.length > 0) {
      print('Last service log lines (warn and above):');
      for (const l of recent) print(`  ${l}`);
    }
    print(
      'Run it again with `npm run rehearse`; everything it started has been stopped and removed.',
    );
  }
  return { ok, steps };
}
