/**
 * The SDK's deposit ladder on anvil, with the test wallet (a real signing wallet in Node:
 * test/embed/wallet.ts) as the EIP-1193 provider: a wallet with atomic batching deposits with one
 * confirmation (EIP-5792, an EIP-7702 account running the batch), a wallet without it over a
 * permit asset with one signature and one transaction (the permit router), a wallet that signs no
 * typed data with approve then deposit; an existing allowance skips the approval; every refusal
 * throws a DepositLadderError that says what happened, and no funds move.
 */
import { type Address, encodeFunctionData, erc20Abi, type Hex, maxUint256 } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ChainClient,
  createChainClient,
  createChainWallet,
  endpointOf,
  LOCAL_NODE_CLIENT,
  LOCAL_NODE_WALLET,
} from '../../../src/chain/client.ts';
import { deployContract, deployEngine } from '../../../src/chain/deploy.ts';
import {
  batchCallAccountAbi,
  batchCallAccountBytecode,
  testUSDAbi,
  testUSDBytecode,
  yieldVaultAbi,
  yieldVaultBytecode,
} from '../../../src/chain/generated/index.ts';
import { DEV_ADDRESSES } from '../../../src/chain/local/accounts.ts';
import { type AnvilHandle, startAnvil } from '../../../src/chain/local/anvil.ts';
import { permitRouterAddress, permitRouterDeployment } from '../../../src/chain/permit-router.ts';
import { createTestWallet, type TestWallet } from '../../../test/embed/wallet.ts';
import {
  DepositLadderError,
  type DepositLadderResult,
  depositWithLadder,
  type LadderStep,
  PERMIT_ROUTER_ADDRESS,
} from '../src/engine/index.ts';

const OPERATOR = DEV_ADDRESSES[0] as Address;
const USD = 1_000_000n;
let anvil: AnvilHandle;
let client: ChainClient;
let asset: Address;
let engine: Address;
let batchAccount: Address;
let nextIndex = 20;
let product: {
  slug: string;
  chain_id: number;
  engine_contract_address: string;
  asset_address: string;
};

const rpc = (method: string, params: unknown[]) =>
  fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
    .then((r) => r.json() as Promise<{ result: unknown }>)
    .then((b) => b.result);

async function sendFrom(from: Address, to: Address, data: Hex) {
  const hash = (await rpc('eth_sendTransaction', [{ from, to, data }])) as Hex;
  const r = await client.waitForTransactionReceipt({ hash });
  if (r.status !== 'success') throw new Error(`setup reverted: ${hash}`);
}

/** A fresh wallet (its own key, no allowance) holding 1,000 of the asset. */
async function wallet(opts: { batch?: boolean; typedData?: boolean } = {}): Promise<TestWallet> {
  const w = createTestWallet({
    rpcUrl: anvil.rpcUrl,
    chainId: anvil.chainId,
    index: nextIndex++,
    ...(opts.batch ? { batchAccount } : {}),
    ...(opts.typedData === false ? { typedData: false } : {}),
  });
  await sendFrom(
    OPERATOR,
    asset,
    encodeFunctionData({ abi: testUSDAbi, functionName: 'mint', args: [w.address, 1_000n * USD] }),
  );
  // Gas money for the wallet's own transactions.
  await rpc('anvil_setBalance', [w.address, '0x56bc75e2d63100000']);
  return w;
}

const balance = (token: Address, who: Address) =>
  client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [who] });
const allowance = (owner: Address, spender: Address) =>
  client.readContract({
    address: asset,
    abi: erc20Abi,
    functionName: 'allowance',
    args: [owner, spender],
  });
const nonce = (who: Address) => client.getTransactionCount({ address: who });

async function snapshot(w: TestWallet) {
  return {
    assets: await balance(asset, w.address),
    shares: await balance(engine, w.address),
    routerAssets: await balance(asset, permitRouterAddress()),
    routerShares: await balance(engine, permitRouterAddress()),
  };
}

async function ladder(w: TestWallet, assets: bigint, steps: LadderStep[] = []) {
  return depositWithLadder({
    provider: w,
    product,
    owner: w.address,
    assets,
    pollIntervalMs: 100,
    onStep: (s) => steps.push(s),
  });
}

async function expectDeposited(
  w: TestWallet,
  before: Awaited<ReturnType<typeof snapshot>>,
  r: DepositLadderResult,
  assets: bigint,
) {
  const after = await snapshot(w);
  expect(after.assets).toBe(before.assets - assets);
  expect(after.shares - before.shares).toBe(r.shares);
  expect(r.shares).toBeGreaterThan(0n);
  expect(after.routerAssets).toBe(0n);
  expect(after.routerShares).toBe(0n);
  expect(await allowance(w.address, engine)).toBe(0n);
  expect(await allowance(w.address, permitRouterAddress())).toBe(0n);
  const mined = await client.getTransactionReceipt({ hash: r.depositTxHash });
  expect(mined.status).toBe('success');
  expect(mined.from.toLowerCase()).toBe(w.address.toLowerCase());
}

async function expectNothingMoved(w: TestWallet, before: Awaited<ReturnType<typeof snapshot>>) {
  expect(await snapshot(w)).toEqual(before);
}

beforeAll(async () => {
  anvil = await startAnvil({});
  client = createChainClient(endpointOf(anvil.rpcUrl, anvil.chainId), LOCAL_NODE_CLIENT);
  const operator = createChainWallet(
    endpointOf(anvil.rpcUrl, anvil.chainId),
    OPERATOR,
    LOCAL_NODE_WALLET,
  );
  asset = (await deployContract(operator, client, testUSDAbi, testUSDBytecode, [OPERATOR])).address;
  const vault = (
    await deployContract(operator, client, yieldVaultAbi, yieldVaultBytecode, [
      asset,
      'V',
      'v',
      OPERATOR,
      0n,
    ])
  ).address;
  engine = (
    await deployEngine(operator, client, {
      asset,
      underlyingVault: vault,
      name: 'Engine',
      symbol: 'yE',
      serviceFeeRecipient: DEV_ADDRESSES[1] as Address,
      partnerFeeRecipient: DEV_ADDRESSES[2] as Address,
      serviceFeeBps: 500,
      partnerFeeBps: 1000,
      operator: OPERATOR,
    })
  ).address;
  batchAccount = (
    await deployContract(operator, client, batchCallAccountAbi, batchCallAccountBytecode, [])
  ).address;
  const { to, data } = permitRouterDeployment();
  await sendFrom(OPERATOR, to, data);
  product = {
    slug: 'ladder',
    chain_id: anvil.chainId,
    engine_contract_address: engine,
    asset_address: asset,
  };
}, 120_000);

afterAll(() => anvil?.stop());

describe('depositWithLadder', () => {
  it("the SDK's router address is the one the service deploys (CREATE2, same bytecode)", async () => {
    expect(PERMIT_ROUTER_ADDRESS).toBe(permitRouterAddress());
    expect(await client.getCode({ address: PERMIT_ROUTER_ADDRESS })).toMatch(/^0x[0-9a-f]{10,}/);
  });

  it('a wallet with atomic batching: one wallet_sendCalls (approve + deposit), followed to its receipt', async () => {
    const w = await wallet({ batch: true });
    const before = await snapshot(w);
    const steps: LadderStep[] = [];
    const r = await ladder(w, 250n * USD, steps);
    expect(r).toMatchObject({ rung: 'batch', approval: 'in_batch', confirmations: 1 });
    expect(w.prompts().map((c) => c.method)).toEqual(['wallet_sendCalls']);
    const [req] = w.prompts()[0]!.params as [
      { atomicRequired: boolean; calls: Array<{ to: string; data: Hex }> },
    ];
    expect(req.atomicRequired).toBe(true);
    expect(req.calls.map((c) => [c.to.toLowerCase(), c.data.slice(0, 10)])).toEqual([
      [asset.toLowerCase(), '0x095ea7b3'],
      [engine.toLowerCase(), '0x6e553f65'],
    ]);
    expect(w.calls.some((c) => c.method === 'wallet_getCallsStatus')).toBe(true);
    expect(r.batchId).toBe(w.prompts()[0]!.outcome);
    expect(steps[0]).toEqual({ step: 'plan', rung: 'batch', approval: 'in_batch' });
    await expectDeposited(w, before, r, 250n * USD);
  });

  it('no batching, a permit asset: one signature and one transaction through the router', async () => {
    const w = await wallet();
    const before = await snapshot(w);
    const r = await ladder(w, 100n * USD);
    expect(r).toMatchObject({ rung: 'permit', approval: 'permit', confirmations: 2 });
    expect(w.prompts().map((c) => c.method)).toEqual([
      'eth_signTypedData_v4',
      'eth_sendTransaction',
    ]);
    const [tx] = w.sent()[0]!.params as [{ to: string }];
    expect(tx.to.toLowerCase()).toBe(PERMIT_ROUTER_ADDRESS.toLowerCase());
    await expectDeposited(w, before, r, 100n * USD);
  });

  it('a wallet that signs no typed data: approve then deposit', async () => {
    const w = await wallet({ typedData: false });
    const before = await snapshot(w);
    const r = await ladder(w, 40n * USD);
    expect(r).toMatchObject({ rung: 'transactions', approval: 'transaction', confirmations: 2 });
    expect(w.sent().map((c) => (c.params as [{ data: Hex }])[0].data.slice(0, 10))).toEqual([
      '0x095ea7b3',
      '0x6e553f65',
    ]);
    await expectDeposited(w, before, r, 40n * USD);
  });

  it('an allowance that covers the amount skips the approval on every rung', async () => {
    for (const opts of [{ batch: true }, {}, { typedData: false }]) {
      const w = await wallet(opts);
      const approved = (await w.request({
        method: 'eth_sendTransaction',
        params: [
          {
            from: w.address,
            to: asset,
            data: encodeFunctionData({
              abi: erc20Abi,
              functionName: 'approve',
              args: [engine, maxUint256],
            }),
          },
        ],
      })) as Hex;
      await client.waitForTransactionReceipt({ hash: approved });
      const before = w.prompts().length;
      const r = await ladder(w, 10n * USD);
      expect(r.approval).toBe('existing_allowance');
      const prompts = w.prompts().slice(before);
      if (opts.batch) {
        expect(r.rung).toBe('batch');
        const [req] = prompts[0]!.params as [{ calls: unknown[] }];
        expect(req.calls).toHaveLength(1);
      } else {
        expect(r.rung).toBe('transactions');
        expect(prompts.map((c) => c.method)).toEqual(['eth_sendTransaction']);
      }
      expect(prompts).toHaveLength(1);
    }
  });

  it('declining the batch, the signature, the approval or the deposit: a clear error, no funds moved', async () => {
    const cases: Array<{
      opts: { batch?: boolean; typedData?: boolean };
      refuse: (method: string, params: unknown) => boolean;
      stage: string;
      words: RegExp;
      approvalLeft: boolean;
    }> = [
      {
        opts: { batch: true },
        refuse: (m) => m === 'wallet_sendCalls',
        stage: 'batch',
        words: /declined the deposit \(approve and deposit in one confirmation\).*No funds moved/,
        approvalLeft: false,
      },
      {
        opts: {},
        refuse: (m) => m === 'eth_signTypedData_v4',
        stage: 'signature',
        words: /declined the permit signature.*No funds moved/,
        approvalLeft: false,
      },
      {
        opts: {},
        refuse: (m) => m === 'eth_sendTransaction',
        stage: 'deposit',
        words: /declined the deposit transaction.*No funds moved/,
        approvalLeft: false,
      },
      {
        opts: { typedData: false },
        refuse: (m) => m === 'eth_sendTransaction',
        stage: 'approve',
        words: /declined the approval.*No funds moved/,
        approvalLeft: false,
      },
      {
        opts: { typedData: false },
        refuse: (m, p) =>
          m === 'eth_sendTransaction' && (p as [{ data: Hex }])[0].data.startsWith('0x6e553f65'),
        stage: 'deposit',
        words:
          /declined the deposit transaction.*No funds moved.*approval transaction went through/,
        approvalLeft: true,
      },
    ];
    for (const c of cases) {
      const w = await wallet(c.opts);
      w.refuse = c.refuse;
      const before = await snapshot(w);
      const startNonce = await nonce(w.address);
      const err = await ladder(w, 10n * USD).catch((e: unknown) => e);
      expect(err, c.stage).toBeInstanceOf(DepositLadderError);
      const e = err as DepositLadderError;
      expect(e.code).toBe('user_rejected');
      expect(e.stage).toBe(c.stage);
      expect(e.message).toMatch(c.words);
      expect(e.approvalLeft).toBe(c.approvalLeft);
      await expectNothingMoved(w, before);
      // Nothing was broadcast but the approval the user confirmed (and it is exact).
      expect(await nonce(w.address)).toBe(startNonce + (c.approvalLeft ? 1 : 0));
      expect(await allowance(w.address, engine)).toBe(c.approvalLeft ? 10n * USD : 0n);
      expect(await allowance(w.address, permitRouterAddress())).toBe(0n);
    }
  });
});
