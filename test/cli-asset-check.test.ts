/**
 * `product create` checks the asset on the chain before anything is written (issue #28 item 4):
 * a fee-on-transfer token is refused with one line naming what arrived, a plain one is created.
 * Real anvil (chain 31337, named by a CHAINS_FILE), the bin's own commander program in process.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Abi, type Address, getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChainWallet, endpointOf, LOCAL_NODE_WALLET } from '../src/chain/client.ts';
import { deployContract } from '../src/chain/deploy.ts';
import {
  feeOnTransferUSDAbi,
  feeOnTransferUSDBytecode,
  yieldVaultAbi,
  yieldVaultBytecode,
} from '../src/chain/generated/index.ts';
import { type Fixture, OPERATOR, setupFixture } from './chain/helpers.ts';
import { runCliInProcess } from './helpers/cli.ts';
import { freshDatabase, type TestDatabase } from './helpers/db.ts';
import { deadPort } from './helpers/net.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'pys-cli-asset-'));
let t: TestDatabase;
let fx: Fixture;
let fot: Address;
let fotVault: Address;

beforeAll(async () => {
  [t, fx] = await Promise.all([freshDatabase('pglite'), setupFixture()]);
  await fx.rpc('evm_setAutomine', [true]);
  const wallet = createChainWallet(
    endpointOf(fx.anvil.rpcUrl, fx.anvil.chainId),
    OPERATOR,
    LOCAL_NODE_WALLET,
  );
  fot = (
    await deployContract(wallet, fx.client, feeOnTransferUSDAbi as Abi, feeOnTransferUSDBytecode, [
      OPERATOR,
      100n,
    ])
  ).address;
  fotVault = (
    await deployContract(wallet, fx.client, yieldVaultAbi as Abi, yieldVaultBytecode, [
      fot,
      'FoT vault',
      'fvUSD',
      OPERATOR,
      0n,
    ])
  ).address;
  writeFileSync(
    path.join(dir, 'chains.json'),
    JSON.stringify([
      {
        chain_id: fx.anvil.chainId,
        name: 'anvil',
        rpc_urls: [fx.anvil.rpcUrl],
        confirmation_depth: 1,
        block_range_limit: 1000,
      },
    ]),
  );
}, 120_000);
afterAll(async () => {
  await Promise.all([t?.drop(), fx?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const cli = (args: string[], chainsFile = 'chains.json') =>
  runCliInProcess(args, {
    env: { DATA_DIR: dir, LOG_LEVEL: 'silent', CHAINS_FILE: path.join(dir, chainsFile) },
    database: t.db,
  });

const create = (slug: string, asset: Address, underlying: Address, chainsFile?: string) =>
  cli(
    [
      'product',
      'create',
      '--partner',
      'Acme Wallet',
      '--env',
      'live',
      '--slug',
      slug,
      '--display-name',
      slug,
      '--risk',
      'low',
      '--chain-id',
      String(fx.anvil.chainId),
      '--vault-kind',
      'sync',
      '--underlying',
      underlying,
      '--asset',
      asset,
      '--asset-symbol',
      'USDC',
      '--asset-decimals',
      '6',
      '--service-fee-bps',
      '500',
      '--partner-fee-bps',
      '500',
      '--service-recipient',
      OPERATOR,
      '--partner-recipient',
      OPERATOR,
      '--hold',
    ],
    chainsFile,
  );

describe('product create checks the asset on the chain', () => {
  it('refuses a fee-on-transfer asset with one line, writes nothing; creates a plain one', async () => {
    expect((await cli(['partner', 'create', '--name', 'Acme Wallet'])).code).toBe(0);
    const refused = await create('fot-usd', fot, fotVault);
    expect(refused.code).toBe(1);
    expect(refused.out).toBe('');
    expect(refused.err).toBe(
      'yield-service: cannot create fot-usd: the asset is fee-on-transfer: sending 100000007 base units delivered 99000007 by transfer and 99000007 by transferFrom, and took 200000014 for both; the engine credits exactly what is sent, so such an asset is refused\n',
    );
    // An asset that is not the underlying vault's: the engine would revert WrongAsset.
    const mismatched = await create('mismatch-usd', fot, fx.syncVault);
    expect(mismatched.code).toBe(1);
    expect(mismatched.err).toMatch(
      /^yield-service: cannot create mismatch-usd: the underlying vault holds/,
    );

    const created = await create('plain-usd', fx.asset, fx.syncVault);
    expect(created.err).toBe('');
    expect(created.code).toBe(0);
    const list = await cli(['product', 'list', '--json']);
    expect(JSON.parse(list.out).map((p: { slug: string }) => p.slug)).toEqual(['plain-usd']);
  });

  it('an RPC provider that cannot be reached is named as such, not blamed on the asset, and its key never shown', async () => {
    const key = 'SECRETRPCKEY123456';
    writeFileSync(
      path.join(dir, 'down.json'),
      JSON.stringify([
        {
          chain_id: fx.anvil.chainId,
          name: 'anvil',
          rpc_urls: [`http://user:${key}@127.0.0.1:${await deadPort()}/v3/${key}?apikey=${key}`],
          confirmation_depth: 1,
          block_range_limit: 1000,
        },
      ]),
    );
    await cli(['partner', 'create', '--name', 'Down Wallet']);
    const r = await create('down-usd', fx.asset, fx.syncVault, 'down.json');
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `yield-service: cannot create down-usd: the chain's RPC provider did not answer decimals() of ${getAddress(fx.asset)} (connection refused, ECONNREFUSED): the asset was not checked; check the chain's rpc_urls and that the provider is reachable, then try again (--skip-asset-check creates it anyway; the engine still refuses a deposit that delivers less than it sends)\n`,
    );
    expect(r.err).not.toContain(key);
    expect(r.err).not.toContain('is it an ERC-20');
  });
});
