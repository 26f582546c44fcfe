/**
 * The permit deposit router on anvil: deployed with CREATE2 at the address the service computes,
 * a deposit by permit in one transaction, a front-run permit tolerated, a bad signature refused
 * with nothing moved, a signature of no use to anyone but its signer; the router holds nothing after.
 */
import { type Address, encodeFunctionData, type Hex, parseSignature } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permitDepositRouterAbi, testUSDAbi } from '../../src/chain/generated/index.ts';
import { DEV_MNEMONIC } from '../../src/chain/local/accounts.ts';
import { permitRouterAddress } from '../../src/chain/permit-router.ts';
import { type Fixture, mineBlock, newEngine, send, setupFixture, USD } from './helpers.ts';

let fx: Fixture;
let engine: Address;
const router = permitRouterAddress();
// DEV_ADDRESSES: 0 operator, 1 service, 2 partner, 3.. users (helpers.ts); these two are users.
const alice = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 5 });
const mallory = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 6 });

async function permitSignature(owner: typeof alice, value: bigint, deadline: bigint) {
  const nonce = (await fx.client.readContract({
    address: fx.asset,
    abi: testUSDAbi,
    functionName: 'nonces',
    args: [owner.address],
  })) as bigint;
  const sig = await owner.signTypedData({
    domain: {
      name: 'Test USD',
      version: '1',
      chainId: fx.anvil.chainId,
      verifyingContract: fx.asset,
    },
    types: {
      Permit: [
        { name: 'owner', type: 'address' },
        { name: 'spender', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'nonce', type: 'uint256' },
        { name: 'deadline', type: 'uint256' },
      ],
    },
    primaryType: 'Permit',
    message: { owner: owner.address, spender: router, value, nonce, deadline },
  });
  return parseSignature(sig);
}

const balanceOf = (token: Address, who: Address) =>
  fx.client.readContract({
    address: token,
    abi: testUSDAbi,
    functionName: 'balanceOf',
    args: [who],
  });
const allowance = (owner: Address, spender: Address) =>
  fx.client.readContract({
    address: fx.asset,
    abi: testUSDAbi,
    functionName: 'allowance',
    args: [owner, spender],
  });

function depositData(
  assets: bigint,
  receiver: Address,
  deadline: bigint,
  s: { v?: bigint; yParity?: number; r: Hex; s: Hex },
) {
  const v = Number(s.v ?? BigInt(27 + (s.yParity ?? 0)));
  return encodeFunctionData({
    abi: permitDepositRouterAbi,
    functionName: 'depositWithPermit',
    args: [engine, assets, receiver, deadline, v, s.r, s.s],
  });
}

async function expectRouterEmpty() {
  expect(await balanceOf(fx.asset, router)).toBe(0n);
  expect(await balanceOf(engine, router)).toBe(0n);
  expect(await allowance(router, engine)).toBe(0n);
}

beforeAll(async () => {
  fx = await setupFixture(); // deploys the router, as the service does on every chain
  engine = await newEngine(fx, fx.syncVault);
}, 60_000);
afterAll(() => fx?.stop());

describe('PermitDepositRouter', () => {
  it('is deployed by CREATE2 (setupFixture sends the deployment) at the address the service computes', async () => {
    const code = await fx.client.getCode({ address: router });
    expect(code && code.length > 2).toBe(true);
  });

  it('deposits by permit in one transaction from the signer; holds nothing after', async () => {
    // alice has no allowance for the router (newEngine approved only the engine).
    expect(await allowance(alice.address, router)).toBe(0n);
    const assets = 1_234n * USD;
    const deadline = BigInt(fx.now + 3600);
    const sig = await permitSignature(alice, assets, deadline);
    const before = await balanceOf(fx.asset, alice.address);
    const sharesBefore = await balanceOf(engine, alice.address);
    const receipt = await send(
      fx,
      alice.address,
      router,
      depositData(assets, alice.address, deadline, sig),
    );
    expect(receipt.from.toLowerCase()).toBe(alice.address.toLowerCase());
    expect(await balanceOf(fx.asset, alice.address)).toBe(before - assets);
    expect(await balanceOf(engine, alice.address)).toBeGreaterThan(sharesBefore);
    expect(await allowance(alice.address, router)).toBe(0n);
    await expectRouterEmpty();
  });

  it('tolerates a front-run permit (the allowance it set is used)', async () => {
    const assets = 10n * USD;
    const deadline = BigInt(fx.now + 3600);
    const sig = await permitSignature(alice, assets, deadline);
    // mallory submits alice's permit to the asset first.
    await send(
      fx,
      mallory.address,
      fx.asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'permit',
        args: [alice.address, router, assets, deadline, Number(sig.v), sig.r, sig.s],
      }),
    );
    expect(await allowance(alice.address, router)).toBe(assets);
    const before = await balanceOf(fx.asset, alice.address);
    await send(fx, alice.address, router, depositData(assets, alice.address, deadline, sig));
    expect(await balanceOf(fx.asset, alice.address)).toBe(before - assets);
    expect(await allowance(alice.address, router)).toBe(0n);
    await expectRouterEmpty();
  });

  it('a bad signature with no allowance reverts and moves nothing', async () => {
    const assets = 10n * USD;
    const deadline = BigInt(fx.now + 3600);
    const sig = await permitSignature(alice, assets + 1n, deadline); // signed for another value
    const before = await balanceOf(fx.asset, alice.address);
    const hash = (await fx.rpc('eth_sendTransaction', [
      {
        from: alice.address,
        to: router,
        data: depositData(assets, alice.address, deadline, sig),
        gas: '0x2dc6c0',
      },
    ])) as Hex;
    await mineBlock(fx);
    expect((await fx.client.getTransactionReceipt({ hash })).status).toBe('reverted');
    expect(await balanceOf(fx.asset, alice.address)).toBe(before);
    await expectRouterEmpty();
  });

  it("alice's signature is of no use to mallory: the router only ever takes the caller's funds", async () => {
    const assets = 10n * USD;
    const deadline = BigInt(fx.now + 3600);
    const sig = await permitSignature(alice, assets, deadline);
    const aliceBefore = await balanceOf(fx.asset, alice.address);
    const hash = (await fx.rpc('eth_sendTransaction', [
      {
        from: mallory.address,
        to: router,
        data: depositData(assets, mallory.address, deadline, sig),
        gas: '0x2dc6c0',
      },
    ])) as Hex;
    await mineBlock(fx);
    expect((await fx.client.getTransactionReceipt({ hash })).status).toBe('reverted');
    expect(await balanceOf(fx.asset, alice.address)).toBe(aliceBefore);
    expect(await allowance(alice.address, router)).toBe(0n);
    await expectRouterEmpty();
  });
});
