/**
 * The partner and product commands: output, validation and exit codes. Run in this process (the
 * bin's own commander program, helpers/cli.ts) on a test database; one smoke test spawns the bin.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProductsRepo } from '../src/db/products.ts';
import { type CliResult, runCliInProcess } from './helpers/cli.ts';
import { freshDatabase, scratchDir, type TestDatabase } from './helpers/db.ts';
import { deadPort } from './helpers/net.ts';
import { spawnCli } from './helpers/process.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pys-cli-'));
let t: TestDatabase;
beforeAll(async () => {
  t = await freshDatabase('pglite');
});
afterAll(async () => {
  await t.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

function cli(args: string[]): Promise<CliResult> {
  return runCliInProcess(args, { env: { DATA_DIR: dataDir, LOG_LEVEL: 'silent' }, database: t.db });
}

const ADDR = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const productArgs = (over: Record<string, string> = {}) => {
  const o: Record<string, string> = {
    partner: 'Acme Wallet',
    env: 'live',
    slug: 'acme-usdc',
    'display-name': 'Acme USDC',
    risk: 'low',
    'chain-id': '31337',
    'vault-kind': 'sync',
    underlying: ADDR,
    asset: ADDR.toLowerCase(),
    'asset-symbol': 'USDC',
    'asset-decimals': '6',
    'service-fee-bps': '500',
    'partner-fee-bps': '1000',
    'service-recipient': ADDR,
    'partner-recipient': ADDR,
    ...over,
  };
  // No chain runs for this file: the asset check (simulated transfers on the chain) is tested
  // against anvil in test/cli-asset-check.test.ts and test/chain/engine-fairness.test.ts.
  return [
    'product',
    'create',
    ...Object.entries(o).flatMap(([k, v]) => [`--${k}`, v]),
    '--skip-asset-check',
  ];
};

describe('operator CLI', () => {
  it('creates and lists partners; a duplicate name exits 1', async () => {
    const created = await cli(['partner', 'create', '--name', 'Acme Wallet']);
    expect(created.code).toBe(0);
    expect(created.out).toMatch(/^ptn_\w+\n$/);
    const json = await cli(['partner', 'create', '--name', 'Bravo Pay', '--json']);
    expect(JSON.parse(json.out)).toMatchObject({
      name: 'Bravo Pay',
      id: expect.stringMatching(/^ptn_/),
    });
    const dup = await cli(['partner', 'create', '--name', 'Acme Wallet']);
    expect(dup.code).toBe(1);
    expect(dup.err).toBe('yield-service: a partner named "Acme Wallet" already exists\n');
    const list = await cli(['partner', 'list', '--json']);
    expect(
      JSON.parse(list.out)
        .map((p: { name: string }) => p.name)
        .sort(),
    ).toEqual(['Acme Wallet', 'Bravo Pay']);
  });

  it('refuses invalid products before touching anything, with one line and exit 1', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ slug: 'Bad_Slug' }, /--slug.*lowercase letters/],
      [{ underlying: '0x70997970c51812dc3A010C7d01b50e0d17dc79C8' }, /--underlying.*EIP-55/],
      [{ asset: '0x1234' }, /--asset.*40 hex/],
      [{ 'service-fee-bps': '3000', 'partner-fee-bps': '2001' }, /total 5001 bps; at most 5000/],
      [{ risk: 'extreme' }, /--risk.*Allowed choices are low, medium, high/],
      [{ 'chain-id': '1' }, /chain 1 is not configured \(configured: 31337\)/],
    ];
    const results = await Promise.all(cases.map(([over]) => cli(productArgs(over))));
    results.forEach((r, i) => {
      expect(r.code, String(cases[i]![1])).toBe(1);
      expect(r.err).toMatch(cases[i]![1]);
      expect(r.out).toBe('');
    });
  });

  it('creates a pending product (EIP-55 addresses), refuses a taken slug or unknown partner', async () => {
    const created = await cli([...productArgs(), '--json']);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.out)).toMatchObject({
      slug: 'acme-usdc',
      partner: 'Acme Wallet',
      status: 'pending_deploy',
      asset_address: ADDR, // given in lowercase, stored checksummed
      engine_contract_address: null,
      engine_symbol: 'yUSDC',
    });
    const taken = await cli(productArgs());
    expect(taken.code).toBe(1);
    expect(taken.err).toBe('yield-service: the slug "acme-usdc" is taken\n');
    const nobody = await cli(productArgs({ partner: 'Nobody', slug: 'nobody-usdc' }));
    expect(nobody.code).toBe(1);
    expect(nobody.err).toBe('yield-service: no partner named "Nobody"\n');

    const list = await cli(['product', 'list']);
    expect(list.out).toMatch(
      /^SLUG\s+PARTNER\s+ENV\s+STATUS\s+CHAIN\s+ENGINE\nacme-usdc\s+Acme Wallet\s+live\s+pending_deploy\s+31337\s+-\n$/,
    );
  });

  it('refuses operator moves a product cannot make, exit 1', async () => {
    const pending = await cli(['product', 'deprecate', 'acme-usdc']);
    expect(pending.code).toBe(1);
    expect(pending.err).toBe(
      'yield-service: cannot deprecate acme-usdc: it is pending_deploy (no engine yet)\n',
    );
    const unknown = await cli(['product', 'pause', 'no-such-product']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toBe('yield-service: no product with slug "no-such-product"\n');
  });
});

describe('the bin, spawned (smoke test of the partner and product commands)', () => {
  it('prints, refuses in one line and exits as the in-process runs do', {
    timeout: 60_000,
  }, async () => {
    // Its own DATA_DIR holding a migrated copy: the command then skips initdb (seconds).
    // Beside the test databases (scratchDir): the copy is renamed in, which needs one file system.
    const smokeDir = scratchDir('pys-cli-smoke-');
    const copy = await freshDatabase('pglite');
    await copy.db.close();
    renameSync(copy.location, path.join(smokeDir, 'pglite'));
    try {
      const run = async (args: string[]) => {
        const p = spawnCli(args, { DATA_DIR: smokeDir, LOG_LEVEL: 'silent' });
        const { code } = await p.exited;
        return { code, out: p.stdout(), err: p.stderr() };
      };
      const created = await run(['partner', 'create', '--name', 'Acme Wallet']);
      expect(created).toMatchObject({ code: 0, err: '' });
      expect(created.out).toMatch(/^ptn_\w+\n$/);
      const refused = await run(productArgs({ slug: 'Bad_Slug' }));
      expect(refused.code).toBe(1);
      expect(refused.out).toBe('');
      expect(refused.err).toMatch(/--slug.*lowercase letters/);
    } finally {
      rmSync(smokeDir, { recursive: true, force: true });
    }
  });
});

describe('operator moves when the chain does not answer', () => {
  // Found by an operator's QA pass: `product pause` with a provider down printed viem's dump with
  // the provider's URL and key, and a stack, and did not say the product was already recorded as
  // paused while its engine still took deposits.
  let db: TestDatabase;
  const dir = mkdtempSync(path.join(tmpdir(), 'pys-cli-chain-'));
  beforeAll(async () => {
    db = await freshDatabase('pglite');
  });
  afterAll(async () => {
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says what the database holds and what to run, one line, the provider key never shown', async () => {
    const port = await deadPort();
    const key = 'SECRETRPCKEY123';
    const chainsFile = path.join(dir, 'chains.json');
    writeFileSync(
      chainsFile,
      JSON.stringify([
        {
          chain_id: 8453,
          rpc_urls: [`http://127.0.0.1:${port}/v3/${key}?apikey=${key}`],
          confirmation_depth: 2,
          block_range_limit: 2000,
          signer: { env: 'QA_SIGNER_KEY' },
        },
      ]),
    );
    const run = (args: string[]) =>
      runCliInProcess(args, {
        env: {
          DATA_DIR: dir,
          LOG_LEVEL: 'silent',
          CHAINS_FILE: chainsFile,
          // anvil's first development key: public, and nothing is sent anyway.
          QA_SIGNER_KEY: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
        },
        database: db.db,
      });
    expect((await run(['partner', 'create', '--name', 'Acme Wallet'])).code).toBe(0);
    const created = await run(productArgs({ slug: 'acme-base', 'chain-id': '8453' }));
    expect(created.code).toBe(0);
    const products = createProductsRepo(db.db);
    const product = (await products.getBySlug('acme-base'))!;
    await products.markDeployed(product.id, {
      engineAddress: ADDR,
      shareDecimals: 12,
      block: 1n,
      at: new Date(),
    });

    const paused = await run(['product', 'pause', 'acme-base']);
    expect(paused.code).toBe(1);
    expect(paused.err).toMatch(
      /^yield-service: acme-base is recorded as paused \(the API shows it paused; vault_pause is sent\), but pause\(\) on its engine did not complete: .+\. Deposits on chain stay open until it does: .*run `yield-service product pause acme-base` again\.\n$/,
    );
    expect((await products.getBySlug('acme-base'))!.operatorPaused).toBe(true);

    const resumed = await run(['product', 'resume', 'acme-base']);
    expect(resumed.err).toMatch(/^yield-service: acme-base is still paused: unpause\(\) .+\n$/);

    const fees = await run(['product', 'fees', 'acme-base']);
    expect(fees.code).toBe(1);
    expect(fees.err).toMatch(/^yield-service: a chain call failed: .+\n$/);

    expect(paused.err).not.toContain('..');
    for (const r of [paused, resumed, fees]) {
      expect(r.err).not.toContain(key);
      expect(r.err).not.toMatch(/\n\s+at /);
    }
  });
});
