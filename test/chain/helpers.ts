/**
 * Test fixture: a fresh anvil per test file, the stablecoin and vaults deployed with automine, and
 * typed helpers that preview a call at the next block (anvil's `pending` tag honours
 * `evm_setNextBlockTimestamp`), send it from an unlocked dev account and decode what it did.
 */
import {
  type Address,
  decodeEventLog,
  encodeFunctionData,
  type Hash,
  type Hex,
  maxUint256,
  type TransactionReceipt,
} from 'viem';
import {
  type ChainClient,
  createChainClient,
  createChainWallet,
  endpointOf,
  LOCAL_NODE_CLIENT,
  LOCAL_NODE_WALLET,
} from '../../src/chain/client.ts';
import { deployContract, deployEngine } from '../../src/chain/deploy.ts';
import {
  asyncYieldVaultAbi,
  asyncYieldVaultBytecode,
  testUSDAbi,
  testUSDBytecode,
  yieldEngineAbi,
  yieldVaultAbi,
  yieldVaultBytecode,
} from '../../src/chain/generated/index.ts';
import { DEV_ADDRESSES } from '../../src/chain/local/accounts.ts';
import { type AnvilHandle, startAnvil } from '../../src/chain/local/anvil.ts';
import { aprBpsToRatePerSecond } from '../../src/chain/local/rates.ts';
import { createRpc, type RpcRequest } from '../../src/chain/local/rpc.ts';
import { permitRouterDeployment } from '../../src/chain/permit-router.ts';

export const USD = 1_000_000n;
export const [OPERATOR, SERVICE, PARTNER, ...USERS] = DEV_ADDRESSES as unknown as Address[] as [
  Address,
  Address,
  Address,
  ...Address[],
];

export interface Fixture {
  anvil: AnvilHandle;
  rpc: RpcRequest;
  client: ChainClient;
  asset: Address;
  syncVault: Address;
  asyncVault: Address;
  /** Next block time; every helper call mines at now + step. */
  now: number;
  stop(): Promise<void>;
}

export async function setupFixture(): Promise<Fixture> {
  const anvil = await startAnvil({ genesisTimestamp: 1_700_000_000 });
  const rpc = createRpc(anvil.rpcUrl);
  const client = createChainClient(endpointOf(anvil.rpcUrl, anvil.chainId), LOCAL_NODE_CLIENT);
  const wallet = createChainWallet(
    endpointOf(anvil.rpcUrl, anvil.chainId),
    OPERATOR,
    LOCAL_NODE_WALLET,
  );
  const asset = (await deployContract(wallet, client, testUSDAbi, testUSDBytecode, [OPERATOR]))
    .address;
  const syncVault = (
    await deployContract(wallet, client, yieldVaultAbi, yieldVaultBytecode, [
      asset,
      'Sync',
      'sUSD',
      OPERATOR,
      aprBpsToRatePerSecond(800),
    ])
  ).address;
  const asyncVault = (
    await deployContract(wallet, client, asyncYieldVaultAbi, asyncYieldVaultBytecode, [
      asset,
      'Async',
      'aUSD',
      OPERATOR,
      aprBpsToRatePerSecond(600),
      86_400n,
    ])
  ).address;
  // The service's permit deposit router, as on every chain the service deploys to (the lifecycle
  // deploys it where it is missing: test/sync/permit-router-keeper.test.ts), sent by the last dev
  // account, which no test uses: the operator's nonces and the engines' addresses stay as they were.
  const router = permitRouterDeployment();
  const routerTx = (await rpc('eth_sendTransaction', [
    {
      from: DEV_ADDRESSES[DEV_ADDRESSES.length - 1],
      to: router.to,
      data: router.data,
      gas: '0x1e8480',
    },
  ])) as Hash;
  await client.waitForTransactionReceipt({ hash: routerTx });
  const block = await client.getBlock();
  const fx: Fixture = {
    anvil,
    rpc,
    client,
    asset,
    syncVault,
    asyncVault,
    now: Number(block.timestamp) + 1,
    stop: () => anvil.stop(),
  };
  // From here on every transaction is mined explicitly, at a block time the test chooses.
  await rpc('evm_setAutomine', [false]);
  for (const v of [syncVault, asyncVault]) {
    await send(
      fx,
      OPERATOR,
      asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'setMinter', args: [v, true] }),
    );
  }
  for (const user of [...USERS, SERVICE, PARTNER]) {
    await send(
      fx,
      OPERATOR,
      asset,
      encodeFunctionData({
        abi: testUSDAbi,
        functionName: 'mint',
        args: [user, 100_000_000n * USD],
      }),
    );
  }
  return fx;
}

/** Deploys an engine over `underlying` and lets every user spend the asset for it. */
export async function newEngine(
  fx: Fixture,
  underlying: Address,
  fees: { service: number; partner: number } = { service: 500, partner: 1000 },
): Promise<Address> {
  const wallet = createChainWallet(
    endpointOf(fx.anvil.rpcUrl, fx.anvil.chainId),
    OPERATOR,
    LOCAL_NODE_WALLET,
  );
  await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
  await fx.rpc('evm_setAutomine', [true]);
  const { address } = await deployEngine(wallet, fx.client, {
    asset: fx.asset,
    underlyingVault: underlying,
    name: 'Engine',
    symbol: 'yE',
    serviceFeeRecipient: SERVICE,
    partnerFeeRecipient: PARTNER,
    serviceFeeBps: fees.service,
    partnerFeeBps: fees.partner,
    operator: OPERATOR,
  });
  await fx.rpc('evm_setAutomine', [false]);
  for (const user of [...USERS, SERVICE, PARTNER]) {
    await send(
      fx,
      user,
      fx.asset,
      encodeFunctionData({ abi: testUSDAbi, functionName: 'approve', args: [address, maxUint256] }),
    );
  }
  return address;
}

/**
 * Sends a transaction and mines it alone at `fx.now` (then advanced by one second). Throws on
 * revert.
 */
export async function send(
  fx: Fixture,
  from: Address,
  to: Address,
  data: Hex,
): Promise<TransactionReceipt> {
  // Explicit gas: an estimate at the previous block can miss the interest-minting branch.
  const hash = (await fx.rpc('eth_sendTransaction', [{ from, to, data, gas: '0x2dc6c0' }])) as Hash;
  await mineBlock(fx);
  const receipt = await fx.client.getTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`transaction reverted: ${hash}`);
  return receipt;
}

/** Mines the queued transactions (if any) in one block at `fx.now`, then advances the clock. */
export async function mineBlock(fx: Fixture): Promise<void> {
  await fx.rpc('evm_setNextBlockTimestamp', [fx.now++]);
  await fx.rpc('evm_mine', []);
}

/** Lets time pass (yield accrues in the vaults) without any transaction. */
export async function warp(fx: Fixture, seconds: number): Promise<void> {
  fx.now += seconds;
  await mineBlock(fx);
}

export async function setRate(fx: Fixture, vault: Address, aprBps: number): Promise<void> {
  await send(
    fx,
    OPERATOR,
    vault,
    encodeFunctionData({
      abi: yieldVaultAbi,
      functionName: 'setRatePerSecond',
      args: [aprBpsToRatePerSecond(aprBps)],
    }),
  );
}

type EngineWrite =
  | { fn: 'deposit'; args: readonly [bigint, Address] }
  | { fn: 'mint'; args: readonly [bigint, Address] }
  | { fn: 'withdraw'; args: readonly [bigint, Address, Address] }
  | { fn: 'redeem'; args: readonly [bigint, Address, Address] }
  | { fn: 'requestRedeem'; args: readonly [bigint, Address, Address] }
  | { fn: 'claimRedeem'; args: readonly [bigint, Address] };

/**
 * Previews `call` at the block it will be mined in, sends it, and returns the previewed result
 * together with the receipt (so a test can compare the preview with the logs).
 */
export async function engineWrite(
  fx: Fixture,
  engine: Address,
  from: Address,
  call: EngineWrite,
): Promise<{ preview: bigint; receipt: TransactionReceipt }> {
  await fx.rpc('evm_setNextBlockTimestamp', [fx.now]);
  const data = encodeEngineCall(call);
  const { data: ret } = await fx.client.call({
    account: from,
    to: engine,
    data,
    blockTag: 'pending',
  });
  const preview = ret ? BigInt(ret.slice(0, 66)) : 0n;
  const receipt = await send(fx, from, engine, data);
  return { preview, receipt };
}

function encodeEngineCall(call: EngineWrite): Hex {
  const abi = yieldEngineAbi;
  switch (call.fn) {
    case 'deposit':
      return encodeFunctionData({ abi, functionName: 'deposit', args: call.args });
    case 'mint':
      return encodeFunctionData({ abi, functionName: 'mint', args: call.args });
    case 'withdraw':
      return encodeFunctionData({ abi, functionName: 'withdraw', args: call.args });
    case 'redeem':
      return encodeFunctionData({ abi, functionName: 'redeem', args: call.args });
    case 'requestRedeem':
      return encodeFunctionData({ abi, functionName: 'requestRedeem', args: call.args });
    case 'claimRedeem':
      return encodeFunctionData({ abi, functionName: 'claimRedeem', args: call.args });
  }
}

export function engineEvents(receipt: TransactionReceipt, engine: Address) {
  return receipt.logs
    .filter((l) => l.address.toLowerCase() === engine.toLowerCase())
    .map((l) => decodeEventLog({ abi: yieldEngineAbi, data: l.data, topics: l.topics }));
}

export function engineReader(fx: Fixture, engine: Address) {
  const r = <
    F extends
      | 'totalAssets'
      | 'totalSupply'
      | 'pendingFeeShares'
      | 'highWaterMark'
      | 'idleAssets'
      | 'heldUnderlyingShares'
      | 'pendingUnderlyingShares'
      | 'serviceFeeSharesTotal'
      | 'partnerFeeSharesTotal'
      | 'serviceFeeAssetsTotal'
      | 'partnerFeeAssetsTotal'
      | 'totalSupplyAfterFees',
  >(
    functionName: F,
  ) =>
    fx.client.readContract({
      address: engine,
      abi: yieldEngineAbi,
      functionName,
    }) as Promise<bigint>;
  return {
    get: r,
    /** The value the next mined block (at `fx.now`) will see. */
    atNextBlock: async (functionName: 'pendingFeeShares' | 'totalAssets') => {
      await fx.rpc('evm_setNextBlockTimestamp', [fx.now]);
      return fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName,
        blockTag: 'pending',
      });
    },
    balanceOf: (who: Address) =>
      fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'balanceOf',
        args: [who],
      }),
    /** What the seed shares (minted by the first deposit to SEED_SHARES_HOLDER) are worth now. */
    seedWorth: async () => {
      const holder = await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'SEED_SHARES_HOLDER',
      });
      const shares = await fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'balanceOf',
        args: [holder],
      });
      return fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'convertToAssets',
        args: [shares],
      });
    },
    /** The assets the first deposit locks in seed shares (`SEED_ASSETS`). */
    seedAssets: () =>
      fx.client.readContract({ address: engine, abi: yieldEngineAbi, functionName: 'SEED_ASSETS' }),
    convertToAssets: (shares: bigint) =>
      fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'convertToAssets',
        args: [shares],
      }),
    maxDeposit: (who: Address) =>
      fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'maxDeposit',
        args: [who],
      }),
    maxMint: (who: Address) =>
      fx.client.readContract({
        address: engine,
        abi: yieldEngineAbi,
        functionName: 'maxMint',
        args: [who],
      }),
  };
}

export async function assetBalance(fx: Fixture, who: Address): Promise<bigint> {
  return fx.client.readContract({
    address: fx.asset,
    abi: testUSDAbi,
    functionName: 'balanceOf',
    args: [who],
  });
}
