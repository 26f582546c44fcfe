/**
 * Where the signing key comes from (src/chain/signer.ts, signer-settings.ts): an environment
 * variable, a key file only its owner may read, or a remote signer over JSON-RPC
 * eth_signTransaction; and the refusals, each saying what to do: a plaintext key in CHAINS_FILE for
 * a public chain id, a key file open to others, a variable that is not set.
 *
 * The remote signer is a real signer process: a second anvil on loopback, started with a random
 * mnemonic (`--mnemonic-random`), so its keys exist in that process only; anvil answers
 * eth_signTransaction for its accounts exactly as Web3Signer and Clef do. The chain node (another
 * anvil, started with Base's chain id 8453) never has the key: it only gets the signed bytes.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  type Address,
  getAddress,
  parseEther,
  parseGwei,
  recoverTransactionAddress,
  toHex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainSettings, ChainsFileError, parseChainsFile } from '../../src/chain/chains.ts';
import { createChainClient, endpointOf, LOCAL_NODE_CLIENT } from '../../src/chain/client.ts';
import { type AnvilHandle, startAnvil } from '../../src/chain/local/anvil.ts';
import { createRpc } from '../../src/chain/local/rpc.ts';
import { RemoteSignerError } from '../../src/chain/remote-signer.ts';
import { SignerError, signerAccount } from '../../src/chain/signer.ts';
import { createTxSender } from '../../src/chain/tx-sender.ts';
import { createChainTransactionsRepo } from '../../src/db/chain-transactions.ts';
import { createLifecycle } from '../../src/sync/lifecycle.ts';
import { freshDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

// A throwaway key made for this test (never funded anywhere but the test's own anvil).
const KEY = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba' as const;
const ADDRESS = privateKeyToAccount(KEY).address;

const entry = (extra: Record<string, unknown>, chainId = 8453) =>
  JSON.stringify([
    {
      chain_id: chainId,
      name: 'Base',
      rpc_urls: ['http://127.0.0.1:1'],
      confirmation_depth: 10,
      block_range_limit: 1000,
      ...extra,
    },
  ]);

describe('signer settings in CHAINS_FILE', () => {
  it('refuses a plaintext key for a public chain id, saying what to do and never echoing it', () => {
    for (const chainId of [1, 8453, 42161]) {
      let err: unknown;
      try {
        parseChainsFile(entry({ deployer_private_key: KEY }, chainId));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ChainsFileError);
      const message = (err as Error).message;
      expect(message).toContain(`plaintext key is refused for chain ${chainId}`);
      expect(message).toContain('"signer"');
      expect(message).toContain('chmod 600');
      expect(message).toContain('docs/maintainers/going-live.md');
      expect(message).not.toContain(KEY.slice(2));
    }
  });

  it('accepts a plaintext key on a local chain id, or on any id marked "local": true', () => {
    expect(
      parseChainsFile(entry({ deployer_private_key: KEY }, 31337))[0]!.deployerPrivateKey,
    ).toBe(KEY);
    expect(parseChainsFile(entry({ deployer_private_key: KEY }, 1337))[0]!.deployerPrivateKey).toBe(
      KEY,
    );
    const rehearsal = parseChainsFile(entry({ deployer_private_key: KEY, local: true }, 8453))[0]!;
    expect(rehearsal).toMatchObject({ deployerPrivateKey: KEY, local: true });
  });

  it('parses each signer source and the transaction policy', () => {
    const [env] = parseChainsFile(
      entry({ signer: { env: 'BASE_KEY' }, max_fee_per_gas_gwei: '0.5', replace_after_blocks: 20 }),
    );
    expect(env).toMatchObject({
      signer: { kind: 'env', variable: 'BASE_KEY' },
      transactions: { maxFeePerGas: parseGwei('0.5'), replaceAfterBlocks: 20 },
    });
    expect(parseChainsFile(entry({ signer: { file: '/run/k' } }))[0]!.signer).toEqual({
      kind: 'file',
      path: '/run/k',
    });
    const lower = ADDRESS.toLowerCase();
    expect(
      parseChainsFile(entry({ signer: { url: 'http://127.0.0.1:9000', address: lower } }))[0]!
        .signer,
    ).toEqual({ kind: 'remote', url: 'http://127.0.0.1:9000', address: ADDRESS });
    expect(() => parseChainsFile(entry({ signer: { env: 'A', file: '/k' } }))).toThrow(
      /exactly one of/,
    );
    expect(() =>
      parseChainsFile(entry({ signer: { env: 'A' }, deployer_private_key: KEY }, 31337)),
    ).toThrow(/keep only "signer"/);
    expect(() => parseChainsFile(entry({ max_fee_per_gas_gwei: -1 }))).toThrow(
      /max_fee_per_gas_gwei/,
    );
  });
});

describe('signer sources', () => {
  let dir: string;
  const chain = (signer: ChainSettings['signer']): ChainSettings => ({
    chainId: 8453,
    name: 'Base',
    rpcUrls: ['http://127.0.0.1:1'],
    confirmationDepth: 10,
    blockRangeLimit: 1000,
    evm: true,
    signer,
  });
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'signer-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the key from an environment variable; a missing one says which to set', () => {
    const account = signerAccount(chain({ kind: 'env', variable: 'K' }), { K: KEY });
    expect(account?.address).toBe(ADDRESS);
    // Without 0x, with a trailing newline (as `cat key > .env` leaves it): the same key.
    expect(
      signerAccount(chain({ kind: 'env', variable: 'K' }), { K: `${KEY.slice(2)}\n` })?.address,
    ).toBe(ADDRESS);
    expect(() => signerAccount(chain({ kind: 'env', variable: 'K' }), {})).toThrow(
      /environment variable K \(signer.env\) is not set: set it/,
    );
    let err: unknown;
    try {
      signerAccount(chain({ kind: 'env', variable: 'K' }), { K: `${KEY}ff` });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SignerError);
    expect((err as Error).message).not.toContain(KEY.slice(2));
  });

  it('reads the key from a file only its owner can read, and refuses one open to others', () => {
    const file = path.join(dir, 'deployer.key');
    writeFileSync(file, `${KEY}\n`);
    chmodSync(file, 0o600);
    expect(signerAccount(chain({ kind: 'file', path: file }))?.address).toBe(ADDRESS);
    chmodSync(file, 0o400);
    expect(signerAccount(chain({ kind: 'file', path: file }))?.address).toBe(ADDRESS);
    for (const mode of [0o644, 0o640, 0o604]) {
      chmodSync(file, mode);
      let err: unknown;
      try {
        signerAccount(chain({ kind: 'file', path: file }));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SignerError);
      expect((err as Error).message).toContain(`mode ${mode.toString(8)}`);
      expect((err as Error).message).toContain(`chmod 600 ${file}`);
      expect((err as Error).message).not.toContain(KEY.slice(2));
    }
    expect(() => signerAccount(chain({ kind: 'file', path: path.join(dir, 'none') }))).toThrow(
      /cannot be read/,
    );
  });

  it('a worker whose key file is open to others refuses to start its chain', () => {
    const file = path.join(dir, 'open.key');
    writeFileSync(file, KEY);
    chmodSync(file, 0o644);
    // The database and client are never reached: the refusal comes first.
    expect(() =>
      createLifecycle({
        db: undefined as never,
        logger: captureLogger().logger,
        chain: chain({ kind: 'file', path: file }),
        client: undefined as never,
        holder: 'test',
      }),
    ).toThrow(/chmod 600/);
  });
});

describe('each signer source sends a transaction on anvil (chain id 8453)', () => {
  let node: AnvilHandle;
  let signerNode: AnvilHandle;
  let t: TestDatabase;
  let remoteAddress: Address;
  let dir: string;
  const logs = captureLogger('debug');

  beforeAll(async () => {
    [node, signerNode, t] = await Promise.all([
      startAnvil({ chainId: 8453 }),
      startAnvil({ chainId: 8453, accounts: 1, extraArgs: ['--mnemonic-random'] }),
      freshDatabase('pglite'),
    ]);
    dir = mkdtempSync(path.join(tmpdir(), 'signer-'));
    const accounts = (await createRpc(signerNode.rpcUrl)('eth_accounts', [])) as string[];
    remoteAddress = getAddress(accounts[0]!);
    // Funds for the key holders, on the chain node (which knows neither key).
    const rpc = createRpc(node.rpcUrl);
    for (const a of [ADDRESS, remoteAddress]) {
      await rpc('anvil_setBalance', [a, toHex(parseEther('10'))]);
    }
  });
  afterAll(async () => {
    await Promise.all([node?.stop(), signerNode?.stop(), t?.drop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const settings = (signer: ChainSettings['signer']): ChainSettings => ({
    chainId: 8453,
    name: 'Base (anvil)',
    rpcUrls: [node.rpcUrl],
    confirmationDepth: 1,
    blockRangeLimit: 1000,
    evm: true,
    signer,
  });

  async function sendWith(chain: ChainSettings, env: NodeJS.ProcessEnv = {}) {
    const client = createChainClient(endpointOf(node.rpcUrl, 8453), LOCAL_NODE_CLIENT);
    const account = signerAccount(chain, env)!;
    const sender = createTxSender({ db: t.db, chain, client, account, log: logs.logger });
    const tx = await sender.send({
      to: '0x000000000000000000000000000000000000dEaD',
      data: '0x',
      value: 1n,
      purpose: `test ${chain.signer?.kind}`,
    });
    const receipt = await sender.waitMined(tx.id, 30_000);
    expect(receipt.status).toBe('success');
    const raw = (await createChainTransactionsRepo(t.db).get(tx.id))!.rawTx;
    return {
      from: receipt.from,
      signedBy: await recoverTransactionAddress({ serializedTransaction: raw as never }),
    };
  }

  it('environment variable', async () => {
    const sent = await sendWith(settings({ kind: 'env', variable: 'DEPLOYER_KEY' }), {
      DEPLOYER_KEY: KEY,
    });
    expect(getAddress(sent.from)).toBe(ADDRESS);
    expect(sent.signedBy).toBe(ADDRESS);
  });

  it('key file (mode 600)', async () => {
    const file = path.join(dir, 'k');
    writeFileSync(file, KEY);
    chmodSync(file, 0o600);
    const sent = await sendWith(settings({ kind: 'file', path: file }));
    expect(sent.signedBy).toBe(ADDRESS);
  });

  it('remote signer over eth_signTransaction, a real signer process on loopback', async () => {
    const sent = await sendWith(
      settings({ kind: 'remote', url: signerNode.rpcUrl, address: remoteAddress }),
    );
    expect(getAddress(sent.from)).toBe(remoteAddress);
    expect(sent.signedBy).toBe(remoteAddress);
  });

  it('a remote signer that does not hold the configured address refuses, and nothing is recorded', async () => {
    const before = await createChainTransactionsRepo(t.db).list({ limit: 100 });
    await expect(
      sendWith(settings({ kind: 'remote', url: signerNode.rpcUrl, address: ADDRESS })),
    ).rejects.toThrow(RemoteSignerError);
    expect(await createChainTransactionsRepo(t.db).list({ limit: 100 })).toHaveLength(
      before.length,
    );
  });

  it('no log line and no database row holds key material', async () => {
    const lines = logs.lines();
    expect(lines.some((l) => l.includes('transaction sent'))).toBe(true);
    const hex = KEY.slice(2).toLowerCase();
    for (const line of lines) expect(line.toLowerCase()).not.toContain(hex);
    const { rows } = await t.db.query('SELECT * FROM chain_transactions');
    expect(JSON.stringify(rows).toLowerCase()).not.toContain(hex);
  });
});
