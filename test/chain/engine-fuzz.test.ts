/**
 * Property fuzz of the engine on anvil (issue #12): seeded random sequences of deposit, mint,
 * withdraw, redeem, asynchronous request and claim, yield, losses, fee changes (scheduled, applied,
 * cancelled, decreased at once), accrual, pause, upstream halts of deposits and of exits,
 * deprecation, share transfers and donations (asset, underlying shares, engine shares), over a
 * synchronous and a strict ERC-7540 underlying. After every step it checks the invariants the issue
 * lists (see `checkStep` and the op handlers), counting every check; a broken one is recorded as a
 * violation with its seed and step, and the test fails unless there are none. Each seed ends with a
 * deprecated, paused engine from which every holder, fee recipients included, must exit in full.
 *
 * Figures (operations, checks, violations, time) are printed per seed. CI runs ENGINE_FUZZ_OPS
 * (default 3,000, the floor issue #12 sets for a CI run) operations in total over
 * ENGINE_FUZZ_SEEDS seeds (default 4, sync and async in turn), every invariant checked after every
 * step; for a deeper run set them higher, e.g. `ENGINE_FUZZ_OPS=40000 ENGINE_FUZZ_SEEDS=16 npx
 * vitest run test/chain/engine-fuzz.test.ts`, and ENGINE_FUZZ_SEED_PREFIX for other sequences.
 *
 * Speed: reads go in JSON-RPC batches at the `pending` block (anvil honours the next timestamp),
 * transactions from unlocked accounts are mined explicitly, every seed starts from an anvil
 * snapshot of the same fixture, and the seeds run on two anvils side by side (see `Lane`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type Abi,
  type Address,
  decodeEventLog,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  type Hex,
  maxUint256,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineConstructorArgs } from '../../src/chain/deploy.ts';
import {
  pooledAsyncVaultAbi,
  pooledAsyncVaultBytecode,
  testUSDAbi,
  yieldEngineAbi,
  yieldEngineBytecode,
  yieldVaultAbi,
} from '../../src/chain/generated/index.ts';
import { createPrng, type Prng } from '../../src/chain/local/prng.ts';
import { aprBpsToRatePerSecond } from '../../src/chain/local/rates.ts';
import { type Fixture, OPERATOR, PARTNER, SERVICE, setupFixture, USD, USERS } from './helpers.ts';
import { type BatchRpc, createBatchRpc, type Read, ReadBatch } from './rpc-batch.ts';

const TOTAL_OPS = Number(process.env.ENGINE_FUZZ_OPS ?? 3000);
const SEED_COUNT = Number(process.env.ENGINE_FUZZ_SEEDS ?? 6);
const SEED_PREFIX = process.env.ENGINE_FUZZ_SEED_PREFIX ?? 'engine-fuzz';
const OPS_PER_SEED = Math.ceil(TOTAL_OPS / SEED_COUNT);

const WALLETS = USERS.slice(0, 5) as Address[];
const DONOR = USERS[5] as Address;
/** Every address that may hold engine shares (besides the engine itself, for escrow and donations). */
const HOLDERS = [...WALLETS, SERVICE, PARTNER, DONOR];
/** The engine's SEED_SHARES_HOLDER: the first deposit or mint locks its seed there, for good. */
const SEED_HOLDER = '0x000000000000000000000000000000000000dEaD' as Address;
const GAS = '0x2dc6c0';
const FEE_DELAY = 2 * 86_400;
const SETTLEMENT = 86_400;
const PRICE_SCALE = 10n ** 27n;
const OFFSET = 10n ** 6n;
const BPS = 10_000n;
const PPM = 1_000_000n;

const engineAbi = yieldEngineAbi as Abi;
const vaultAbi = yieldVaultAbi as Abi;
const assetAbi = testUSDAbi as Abi;
const pooledAbi = pooledAsyncVaultAbi as Abi;

/** async: an id per request (AsyncYieldVault); pooled: every request under id 0 (PooledAsyncVault). */
type Kind = 'sync' | 'async' | 'pooled';

type Op =
  | { kind: 'deposit'; actor: Address; amount: bigint | 'max' }
  | { kind: 'mint'; actor: Address; ppm: bigint }
  | { kind: 'withdraw'; actor: Address; ppm: bigint | 'max' }
  | { kind: 'redeem'; actor: Address; ppm: bigint | 'max' }
  | { kind: 'roundtrip'; actor: Address; amount: bigint }
  | { kind: 'request'; actor: Address; ppm: bigint | 'all' }
  | { kind: 'claim'; id: bigint; receiver: Address }
  | { kind: 'transfer'; from: Address; to: Address; ppm: bigint }
  | { kind: 'donateAsset'; amount: bigint }
  | { kind: 'donateUnderlying'; amount: bigint }
  | { kind: 'donateShares'; from: Address; ppm: bigint }
  | { kind: 'yield'; seconds: number; aprBps?: number }
  | { kind: 'loss'; divisor: bigint }
  | { kind: 'accrue'; actor: Address }
  | { kind: 'setFees'; s: bigint; p: bigint }
  | { kind: 'applyFees'; actor: Address }
  | { kind: 'cancelFees' }
  | { kind: 'pause'; on: boolean }
  | { kind: 'upstreamPause'; on: boolean }
  | { kind: 'exitHalt'; on: boolean }
  | { kind: 'deprecate' }
  /** Pooled underlying: its operator fulfils this part of the engine's pending shares. */
  | { kind: 'fulfil'; ppm: bigint };

interface OpenRequest {
  id: bigint;
  controller: Address;
  shares: bigint;
  uShares: bigint;
  settleAt: number;
  /** The idle asset the request took (reserved), its fee-free base and the fee in force then. */
  idle: bigint;
  base: bigint;
  feeBps: bigint;
  /** Pooled underlying: start of the request's interval in the engine's queue. */
  queueStart: bigint;
}

interface Model {
  engine: Address;
  vault: Address;
  isAsync: boolean;
  fees: { s: bigint; p: bigint };
  scheduled: { s: bigint; p: bigint; at: bigint } | null;
  paused: boolean;
  deprecated: boolean;
  upstreamPaused: boolean;
  exitsHalted: boolean;
  requests: Map<bigint, OpenRequest>;
  /**
   * Pooled underlying: underlying shares queued by the engine's requests, fulfilled by the vault,
   * settled (redeemed) by the engine; the engine's checkpoints as modelled; asset settled and not
   * yet paid out by a claim.
   */
  pooled: boolean;
  queued: bigint;
  fulfilled: bigint;
  settled: bigint;
  checkpoints: { cumShares: bigint; cumAssets: bigint; poolPrice: bigint }[];
  settledUnpaid: bigint;
  /** Engine share balances as of the last step (they do not move with time). */
  balances: Map<Address, bigint>;
  mark: bigint;
}

interface Figures {
  seed: string;
  kind: Kind;
  operations: number;
  checks: number;
  violations: string[];
  reverted: number;
  ms: number;
  byKind: Record<string, number>;
}

/**
 * One anvil with the fixture, and the seeds that run on it one after another. Two lanes run side by
 * side (sync seeds on one, async seeds on the other): each step waits on its node half the time, so
 * two nodes keep both cores busy (#13). The lane of the running seed is found through `lane()`.
 */
interface Lane {
  fx: Fixture;
  batchRpc: BatchRpc;
  baseSnapshot: string;
  /** The ERC-7540 reference-pattern underlying (every request under id 0). */
  pooledVault: Address;
}
const LANE_COUNT = 2;
const lanes: Lane[] = [];
const laneStore = new AsyncLocalStorage<Lane>();
function lane(): Lane {
  const l = laneStore.getStore();
  if (!l) throw new Error('no fuzz lane: run inside laneStore.run');
  return l;
}

async function setupLane(): Promise<Lane> {
  const fx = await setupFixture();
  const l: Lane = {
    fx,
    batchRpc: createBatchRpc(fx.anvil.rpcUrl),
    baseSnapshot: '',
    pooledVault: fx.asset,
  };
  lanes.push(l);
  await laneStore.run(l, async () => {
    const [deployed] = await mine([
      {
        from: OPERATOR,
        data: encodeDeployData({
          abi: pooledAsyncVaultAbi,
          bytecode: pooledAsyncVaultBytecode,
          args: [fx.asset, 'Pooled', 'pUSD', OPERATOR, aprBpsToRatePerSecond(600)],
        }),
      },
    ]);
    if (!deployed?.contractAddress) throw new Error('pooled vault deployment failed');
    l.pooledVault = getAddress(deployed.contractAddress);
    await sendNow(OPERATOR, fx.asset, enc(assetAbi, 'setMinter', [l.pooledVault, true]));
    // The donor also buys underlying shares for the engine.
    for (const vault of [fx.syncVault, fx.asyncVault, l.pooledVault]) {
      await sendNow(
        DONOR,
        fx.asset,
        encodeFunctionData({ abi: testUSDAbi, functionName: 'approve', args: [vault, maxUint256] }),
      );
    }
  });
  l.baseSnapshot = (await fx.rpc('evm_snapshot', [])) as string;
  return l;
}

beforeAll(async () => {
  await Promise.all(Array.from({ length: LANE_COUNT }, setupLane));
});
afterAll(async () => {
  await Promise.all(lanes.map((l) => l.fx.stop()));
});

// ------------------------------------------------------------------ chain plumbing

interface Receipt {
  status: 'success' | 'reverted';
  logs: { address: string; topics: Hex[]; data: Hex }[];
  contractAddress?: string;
}

/** Sends transactions (unlocked accounts) and mines them in one block at `lane().fx.now`. */
async function sendAndMine(
  txs: readonly { from: Address; to?: Address; data: Hex }[],
): Promise<Hex[]> {
  const hashes: Hex[] = [];
  for (const tx of txs) {
    hashes.push((await lane().fx.rpc('eth_sendTransaction', [{ ...tx, gas: GAS }])) as Hex);
  }
  await lane().fx.rpc('evm_mine', [lane().fx.now]);
  lane().fx.now += 1;
  return hashes;
}

function toReceipt(result: unknown): Receipt {
  if (!result) throw new Error('receipt missing');
  const rc = result as {
    status: Hex;
    logs: { address: string; topics: Hex[]; data: Hex }[];
    contractAddress?: string;
  };
  return {
    status: rc.status === '0x1' ? 'success' : 'reverted',
    logs: rc.logs,
    contractAddress: rc.contractAddress,
  };
}

async function mine(
  txs: readonly { from: Address; to?: Address; data: Hex }[],
): Promise<Receipt[]> {
  const hashes = await sendAndMine(txs);
  const receipts = await lane().batchRpc(
    hashes.map((h) => ({ method: 'eth_getTransactionReceipt', params: [h] })),
  );
  return receipts.map((r) => toReceipt(r.ok ? r.result : undefined));
}

async function sendNow(from: Address, to: Address, data: Hex): Promise<void> {
  const [r] = await mine([{ from, to, data }]);
  if (r?.status !== 'success') throw new Error(`setup transaction to ${to} reverted`);
}

const enc = (abi: Abi, functionName: string, args: readonly unknown[] = []) =>
  encodeFunctionData({ abi, functionName, args } as never);

function engineLogs(logs: { address: string; topics: Hex[]; data: Hex }[], engine: Address) {
  const out: { eventName: string; args: Record<string, unknown> }[] = [];
  for (const l of logs) {
    if (l.address.toLowerCase() !== engine.toLowerCase()) continue;
    try {
      const e = decodeEventLog({ abi: yieldEngineAbi, data: l.data, topics: l.topics as never });
      out.push({ eventName: e.eventName, args: (e.args ?? {}) as Record<string, unknown> });
    } catch {
      // not an engine event
    }
  }
  return out;
}

// ------------------------------------------------------------------ the fee model

/**
 * The fee the issue specifies: bps of the exact gain above the per-share mark (rounded down), none
 * at or below it; the mark then moves by the gain charged (rounded up), never to the price.
 */
function feeModel(
  activeAssets: bigint,
  activeSupply: bigint,
  mark: bigint,
  fees: { s: bigint; p: bigint },
) {
  const assets = activeAssets + 1n;
  const supply = activeSupply + OFFSET;
  const value = assets * PRICE_SCALE;
  const atMark = mark * supply;
  const none = {
    feeShares: 0n,
    feeAssets: 0n,
    newMark: mark,
    atOrBelow: value <= atMark,
    assets,
    supply,
  };
  if (value <= atMark) return none;
  const total = fees.s + fees.p;
  if (total === 0n) return { ...none, newMark: value / supply };
  const gain = value - atMark;
  const feeAssets = (gain * total) / (BPS * PRICE_SCALE);
  if (feeAssets === 0n) return none;
  const feeShares = (feeAssets * supply) / (assets - feeAssets);
  if (feeShares === 0n) return none;
  const charged = ceilDiv(feeAssets * BPS * PRICE_SCALE, total);
  let newMark = ceilDiv(atMark + charged, supply + feeShares);
  if (newMark < mark) newMark = mark;
  return { feeShares, feeAssets, newMark, atOrBelow: false, assets, supply };
}

const ceilDiv = (x: bigint, y: bigint) => (x + y - 1n) / y;

// ------------------------------------------------------------------ one seed

class SeedRun {
  readonly figures: Figures;
  private step = 0;

  constructor(
    private readonly prng: Prng,
    private readonly m: Model,
    seed: string,
    kind: Kind,
  ) {
    this.figures = {
      seed,
      kind,
      operations: 0,
      checks: 0,
      violations: [],
      reverted: 0,
      ms: 0,
      byKind: {},
    };
  }

  private check(ok: boolean, what: string, detail: () => string = () => ''): void {
    this.figures.checks++;
    if (!ok && this.figures.violations.length < 50) {
      this.figures.violations.push(`step ${this.step}: ${what} ${detail()}`);
    }
  }

  private eq(a: bigint | number | boolean | string | null, b: typeof a, what: string): void {
    this.check(a === b, what, () => `(got ${String(a)}, expected ${String(b)})`);
  }

  private readEngine(
    b: ReadBatch,
    fn: string,
    args: readonly unknown[] = [],
    block: 'latest' | 'pending' = 'latest',
  ) {
    return b.call<bigint>(this.m.engine, engineAbi, fn, args, { block });
  }

  /**
   * Whether a request is settled upstream (claimable once exits are open): dust at once; an own-id
   * request after the vault's settlement delay; a pooled one once the vault's fulfilments reach
   * the end of its interval of the queue, whatever requests after it are still pending.
   */
  covered(r: OpenRequest): boolean {
    if (r.uShares === 0n) return true;
    if (this.m.pooled) return r.queueStart + r.uShares <= this.m.fulfilled;
    return r.settleAt <= lane().fx.now;
  }

  /** Random op from the current model. */
  pick(isLastPhase: boolean): Op {
    const { prng, m } = this;
    const actor = prng.chance(0.85) ? prng.pick(WALLETS) : prng.pick([SERVICE, PARTNER, DONOR]);
    const ppm = () => (prng.chance(0.15) ? PPM : BigInt(prng.int(1, 1_000_000)));
    const amount = () =>
      prng.chance(0.1)
        ? BigInt(prng.int(1, 1000))
        : BigInt(prng.int(1, 200_000)) * USD + BigInt(prng.int(0, 999_999));
    const roll = prng.int(0, 999);
    const holders = HOLDERS.filter((h) => (m.balances.get(h) ?? 0n) > 0n);
    const holder = holders.length > 0 ? prng.pick(holders) : actor;
    let acc = 0;
    const w = (n: number) => {
      acc += n;
      return roll < acc;
    };
    if (w(150)) return { kind: 'deposit', actor, amount: amount() };
    if (w(60)) return { kind: 'mint', actor, ppm: BigInt(prng.int(1, 1_000_000)) };
    if (w(80)) return { kind: 'withdraw', actor: holder, ppm: prng.chance(0.25) ? 'max' : ppm() };
    if (w(80)) return { kind: 'redeem', actor: holder, ppm: prng.chance(0.25) ? 'max' : ppm() };
    if (w(30) && !m.isAsync) return { kind: 'roundtrip', actor, amount: amount() };
    if (m.isAsync && w(90))
      return { kind: 'request', actor: holder, ppm: prng.chance(0.2) ? 'all' : ppm() };
    if (m.isAsync && w(90)) {
      const open = [...m.requests.values()];
      if (open.length > 0) {
        const due = open.filter((r) => this.covered(r));
        const r = due.length > 0 && prng.chance(0.9) ? prng.pick(due) : prng.pick(open);
        return {
          kind: 'claim',
          id: r.id,
          receiver: prng.chance(0.8) ? r.controller : prng.pick(WALLETS),
        };
      }
    }
    if (m.pooled && m.queued > m.fulfilled && w(70))
      return { kind: 'fulfil', ppm: prng.chance(0.3) ? PPM : BigInt(prng.int(1, 1_000_000)) };
    if (w(50)) {
      const to = prng.pick(HOLDERS.filter((h) => h !== holder));
      return { kind: 'transfer', from: holder, to, ppm: ppm() };
    }
    if (w(20)) return { kind: 'donateAsset', amount: amount() };
    if (w(20)) return { kind: 'donateUnderlying', amount: amount() };
    if (w(8)) return { kind: 'donateShares', from: holder, ppm: BigInt(prng.int(1, 50_000)) };
    if (w(110)) {
      const seconds = prng.chance(0.5) ? prng.int(12, 3600) : prng.int(3600, 2 * 86_400);
      return { kind: 'yield', seconds, aprBps: prng.chance(0.2) ? prng.int(0, 2500) : undefined };
    }
    if (w(20)) return { kind: 'loss', divisor: BigInt(prng.int(30, 2000)) };
    if (w(40)) return { kind: 'accrue', actor };
    if (w(30)) {
      const s = BigInt(prng.int(0, 2000));
      const p = BigInt(prng.int(0, 2000));
      // Now and then an invalid total (refused) and a zero fee.
      if (prng.chance(0.05)) return { kind: 'setFees', s: 3000n, p: 2001n };
      return { kind: 'setFees', s, p: prng.chance(0.1) ? 0n : p };
    }
    if (w(25)) return { kind: 'applyFees', actor };
    if (w(6)) return { kind: 'cancelFees' };
    if (w(15)) return { kind: 'pause', on: !m.paused };
    if (w(15)) return { kind: 'upstreamPause', on: !m.upstreamPaused };
    if (w(20)) return { kind: 'exitHalt', on: !m.exitsHalted };
    if (isLastPhase && !m.deprecated && w(15)) return { kind: 'deprecate' };
    return { kind: 'yield', seconds: prng.int(12, 600) };
  }

  /** Runs one op and checks every invariant around it. */
  async run(op: Op): Promise<void> {
    const { m } = this;
    this.step++;
    this.figures.operations++;
    this.figures.byKind[op.kind] = (this.figures.byKind[op.kind] ?? 0) + 1;
    if (op.kind === 'yield') lane().fx.now += op.seconds;
    await lane().fx.rpc('evm_setNextBlockTimestamp', [lane().fx.now]);

    // ---- A: the state at the block the op is mined in
    const a = new ReadBatch(lane().batchRpc);
    const P = 'pending' as const;
    const eng = (fn: string, args: readonly unknown[] = []) => this.readEngine(a, fn, args, P);
    const actor = actorOf(op);
    const pre = {
      activeAssets: eng('activeAssets'),
      activeSupply: eng('activeSupply'),
      mark: eng('highWaterMark'),
      pendingFeeShares: eng('pendingFeeShares'),
      pendingFees: a.call<readonly [bigint, bigint]>(m.engine, engineAbi, 'pendingFees', [], {
        block: P,
      }),
      held: eng('heldUnderlyingShares'),
      idle: eng('idleAssets'),
      exitLiquidity: eng('exitLiquidity'),
      maxDeposit: eng('maxDeposit', [actor]),
      maxMint: eng('maxMint', [actor]),
      maxWithdraw: eng('maxWithdraw', [actor]),
      maxRedeem: eng('maxRedeem', [actor]),
      assetOfActor: a.call<bigint>(lane().fx.asset, assetAbi, 'balanceOf', [actor], { block: P }),
      previewDeposit1000: eng('previewDeposit', [1000n * USD]),
      nextRequestId: eng('nextRequestId'),
      seedShares: eng('balanceOf', [SEED_HOLDER]),
      uTotalAssets: a.call<bigint>(m.vault, vaultAbi, 'totalAssets', [], { block: P }),
      uTotalSupply: a.call<bigint>(m.vault, vaultAbi, 'totalSupply', [], { block: P }),
      uMaxDeposit: a.call<bigint>(m.vault, vaultAbi, 'maxDeposit', [m.engine], { block: P }),
      // Pooled underlying: what the vault has fulfilled for the engine and not yet paid out.
      uClaimable: m.pooled
        ? a.call<bigint>(m.vault, pooledAbi, 'claimableShares', [m.engine], { block: P })
        : undefined,
      uClaimableAssets: m.pooled
        ? a.call<bigint>(m.vault, pooledAbi, 'claimableAssets', [m.engine], { block: P })
        : undefined,
      values: new Map(HOLDERS.map((h) => [h, eng('convertToAssets', [m.balances.get(h) ?? 0n])])),
    };
    const receiver = op.kind === 'claim' ? op.receiver : actor;
    const assetOfReceiver = a.call<bigint>(lane().fx.asset, assetAbi, 'balanceOf', [receiver], {
      block: P,
    });
    const rtAmount = op.kind === 'roundtrip' ? op.amount : 1234n * USD;
    const rtShares = eng('previewDeposit', [rtAmount]);
    await a.run();

    const model = feeModel(pre.activeAssets(), pre.activeSupply(), m.mark, m.fees);
    this.eq(pre.mark(), m.mark, 'high-water mark as the model holds it');
    this.eq(pre.pendingFeeShares(), model.feeShares, 'pendingFeeShares() = the fee model');
    {
      const [ps, pp] = pre.pendingFees();
      const total = m.fees.s + m.fees.p;
      const expS = total === 0n ? 0n : (model.feeAssets * m.fees.s) / total;
      this.eq(ps, expS, 'pendingFees() service part');
      this.eq(pp, model.feeAssets - expS, 'pendingFees() partner part');
    }
    // max* reflect every limit.
    if (m.paused || m.deprecated || m.upstreamPaused)
      this.eq(pre.maxDeposit(), 0n, 'maxDeposit 0 while closed');
    this.check(pre.maxWithdraw() <= pre.exitLiquidity(), 'maxWithdraw <= exitLiquidity');
    // A fee recipient's call mints its pending fee first: it may redeem those shares too.
    const feeRecipient = actor === SERVICE || actor === PARTNER;
    this.check(
      pre.maxRedeem() <=
        (m.balances.get(actor) ?? 0n) + (feeRecipient ? pre.pendingFeeShares() : 0n),
      'maxRedeem <= balance',
    );
    if (m.isAsync)
      this.check(pre.exitLiquidity() === pre.idle(), 'async: exits at once only from idle');

    // ---- the op's transactions and what must happen
    const txs: { from: Address; to: Address; data: Hex }[] = [];
    let expectOk = true;
    let accrues = false;
    let feeApply = false;
    const involved = new Set<Address>([actor, receiver]);
    const b = new ReadBatch(lane().batchRpc);
    const engB = (fn: string, args: readonly unknown[] = []) => this.readEngine(b, fn, args, P);
    let preview: Read<bigint> | undefined;
    let amount = 0n;
    let owed: Read<bigint> | undefined;
    let stayValue: Read<bigint> | undefined;
    let claimCovered = false;
    let expectedUShares = 0n;
    let expectedIdle = 0n;
    const balance = m.balances.get(actor) ?? 0n;
    const feeTotal = m.fees.s + m.fees.p;
    const serviceFee = feeTotal === 0n ? 0n : (pre.pendingFeeShares() * m.fees.s) / feeTotal;
    const ownPendingFee =
      (actor === SERVICE ? serviceFee : 0n) +
      (actor === PARTNER ? pre.pendingFeeShares() - serviceFee : 0n);
    const frac = (x: bigint, p: bigint) => {
      const v = (x * p) / PPM;
      return v === 0n && x > 0n ? 1n : v;
    };
    const uConvertToShares = (assets: bigint) =>
      (assets * (pre.uTotalSupply() + 1n)) / (pre.uTotalAssets() + 1n);

    // Within max*, a call must succeed: simulated at the op's block, whatever the op is.
    const sims: [string, Read<unknown>][] = [];
    {
      const dep = min(pre.maxDeposit(), pre.assetOfActor());
      if (dep > 0n)
        sims.push([
          'deposit(maxDeposit)',
          b.call(m.engine, engineAbi, 'deposit', [dep, actor], { block: P, from: actor }),
        ]);
      const mnt = min(pre.maxMint(), pre.previewDeposit1000());
      if (mnt > 0n && pre.assetOfActor() > 1001n * USD)
        sims.push([
          'mint(maxMint)',
          b.call(m.engine, engineAbi, 'mint', [mnt, actor], { block: P, from: actor }),
        ]);
      if (pre.maxWithdraw() > 0n)
        sims.push([
          'withdraw(maxWithdraw)',
          b.call(m.engine, engineAbi, 'withdraw', [pre.maxWithdraw(), actor, actor], {
            block: P,
            from: actor,
          }),
        ]);
      if (pre.maxRedeem() > 0n)
        sims.push([
          'redeem(maxRedeem)',
          b.call(m.engine, engineAbi, 'redeem', [pre.maxRedeem(), actor, actor], {
            block: P,
            from: actor,
          }),
        ]);
    }
    const rtBack = engB('previewRedeem', [rtShares()]);

    switch (op.kind) {
      case 'deposit': {
        amount = op.amount === 'max' ? min(pre.maxDeposit(), pre.assetOfActor()) : op.amount;
        if (amount === 0n) amount = 1n;
        expectOk = amount <= pre.maxDeposit() && amount <= pre.assetOfActor();
        preview = engB('previewDeposit', [amount]);
        txs.push({ from: actor, to: m.engine, data: enc(engineAbi, 'deposit', [amount, actor]) });
        accrues = true;
        break;
      }
      case 'mint': {
        amount = frac(pre.previewDeposit1000() * 100n, op.ppm);
        preview = engB('previewMint', [amount]);
        txs.push({ from: actor, to: m.engine, data: enc(engineAbi, 'mint', [amount, actor]) });
        accrues = true;
        break;
      }
      case 'withdraw': {
        const max = pre.maxWithdraw();
        amount = op.ppm === 'max' ? max : frac(max, op.ppm);
        if (amount === 0n) {
          if (balance === 0n) return this.skip();
          amount = 1n; // beyond max*: must revert
        }
        expectOk = amount <= max;
        preview = engB('previewWithdraw', [amount]);
        txs.push({
          from: actor,
          to: m.engine,
          data: enc(engineAbi, 'withdraw', [amount, actor, actor]),
        });
        accrues = true;
        break;
      }
      case 'redeem': {
        const max = pre.maxRedeem();
        amount = op.ppm === 'max' ? max : frac(max, op.ppm);
        if (amount === 0n) {
          if (balance === 0n) return this.skip();
          amount = min(balance, pre.previewDeposit1000()); // beyond max*: must revert
          expectOk = false;
        }
        expectOk &&= amount <= max;
        preview = engB('previewRedeem', [amount]);
        txs.push({
          from: actor,
          to: m.engine,
          data: enc(engineAbi, 'redeem', [amount, actor, actor]),
        });
        accrues = true;
        break;
      }
      case 'roundtrip': {
        amount = op.amount;
        if (amount > pre.maxDeposit() || m.exitsHalted || m.isAsync) return this.skip();
        txs.push({ from: actor, to: m.engine, data: enc(engineAbi, 'deposit', [amount, actor]) });
        txs.push({
          from: actor,
          to: m.engine,
          data: enc(engineAbi, 'redeem', [rtShares(), actor, actor]),
        });
        accrues = true;
        break;
      }
      case 'request': {
        if (balance === 0n) return this.skip();
        // 'all': what the holder has once the call's accrual minted its pending fee (a recipient).
        amount = op.ppm === 'all' ? balance + ownPendingFee : frac(balance, op.ppm);
        preview = engB('convertToAssets', [amount]);
        txs.push({
          from: actor,
          to: m.engine,
          data: enc(engineAbi, 'requestRedeem', [amount, actor, actor]),
        });
        accrues = true;
        break;
      }
      case 'claim': {
        const r = m.requests.get(op.id);
        if (!r) return this.skip();
        if (m.pooled) {
          // Settled by the engine already, or fulfilled upstream and settled by the claim itself.
          const end = r.queueStart + r.uShares;
          claimCovered =
            r.uShares === 0n || end <= m.settled || (end <= m.fulfilled && !m.exitsHalted);
        } else {
          claimCovered = r.uShares === 0n || (r.settleAt <= lane().fx.now && !m.exitsHalted);
        }
        expectOk = claimCovered;
        owed = b.call<bigint>(m.vault, vaultAbi, 'convertToAssets', [r.uShares], { block: P });
        stayValue = engB('convertToAssets', [r.shares]);
        txs.push({
          from: r.controller,
          to: m.engine,
          data: enc(engineAbi, 'claimRedeem', [op.id, op.receiver]),
        });
        involved.add(r.controller);
        accrues = expectOk;
        break;
      }
      case 'transfer':
      case 'donateShares': {
        const from = op.from;
        const to = op.kind === 'transfer' ? op.to : m.engine;
        const bal = m.balances.get(from) ?? 0n;
        if (bal === 0n) return this.skip();
        amount = frac(bal, op.ppm);
        involved.add(from).add(to);
        txs.push({ from, to: m.engine, data: enc(engineAbi, 'transfer', [to, amount]) });
        break;
      }
      case 'donateAsset':
        txs.push({
          from: DONOR,
          to: lane().fx.asset,
          data: enc(assetAbi, 'transfer', [m.engine, op.amount]),
        });
        break;
      case 'donateUnderlying':
        if (m.upstreamPaused) return this.skip();
        txs.push({
          from: DONOR,
          to: m.vault,
          data: enc(vaultAbi, 'deposit', [op.amount, m.engine]),
        });
        break;
      case 'yield':
        if (op.aprBps !== undefined)
          txs.push({
            from: OPERATOR,
            to: m.vault,
            data: enc(vaultAbi, 'setRatePerSecond', [aprBpsToRatePerSecond(op.aprBps)]),
          });
        break;
      case 'loss':
        txs.push({
          from: OPERATOR,
          to: m.vault,
          data: enc(vaultAbi, 'realizeLoss', [pre.uTotalAssets() / op.divisor]),
        });
        break;
      case 'accrue':
        txs.push({ from: actor, to: m.engine, data: enc(engineAbi, 'accrueFees') });
        accrues = true;
        break;
      case 'setFees': {
        expectOk = op.s + op.p <= 5000n;
        const decrease = op.s <= m.fees.s && op.p <= m.fees.p;
        accrues = expectOk && decrease;
        feeApply = accrues;
        txs.push({
          from: OPERATOR,
          to: m.engine,
          data: enc(engineAbi, 'setFees', [Number(op.s), Number(op.p)]),
        });
        break;
      }
      case 'applyFees':
        expectOk = m.scheduled !== null && BigInt(lane().fx.now) >= m.scheduled.at;
        accrues = expectOk;
        feeApply = expectOk;
        txs.push({ from: actor, to: m.engine, data: enc(engineAbi, 'applyFeeChange') });
        break;
      case 'cancelFees':
        expectOk = m.scheduled !== null;
        txs.push({ from: OPERATOR, to: m.engine, data: enc(engineAbi, 'cancelFeeChange') });
        break;
      case 'pause':
        txs.push({
          from: OPERATOR,
          to: m.engine,
          data: enc(engineAbi, op.on ? 'pause' : 'unpause'),
        });
        break;
      case 'upstreamPause':
        txs.push({ from: OPERATOR, to: m.vault, data: enc(vaultAbi, 'setPaused', [op.on]) });
        break;
      case 'exitHalt':
        txs.push({ from: OPERATOR, to: m.vault, data: enc(vaultAbi, 'setExitsHalted', [op.on]) });
        break;
      case 'deprecate':
        expectOk = !m.deprecated;
        txs.push({ from: OPERATOR, to: m.engine, data: enc(engineAbi, 'deprecate') });
        break;
      case 'fulfil': {
        const open = m.queued - m.fulfilled;
        if (!m.pooled || open === 0n) return this.skip();
        amount = frac(open, op.ppm);
        txs.push({
          from: OPERATOR,
          to: m.vault,
          data: enc(pooledAbi, 'fulfillRedeem', [m.engine, amount]),
        });
        break;
      }
    }
    await b.run();
    for (const [what, sim] of sims) {
      const o = sim.outcome();
      this.check(o.ok, `a call within max* succeeds: ${what}`, () => (o.ok ? '' : o.error));
    }
    this.check(
      rtBack() <= rtAmount,
      'redeem(deposit(a)) <= a (previews)',
      () => `${rtBack()} > ${rtAmount}`,
    );

    // Predictions that need B's reads.
    if (op.kind === 'mint')
      expectOk = amount <= pre.maxMint() && (preview?.() ?? 0n) <= pre.assetOfActor();
    if (op.kind === 'request') {
      // The request takes its share of the idle asset (of the supply after the call's accrual)
      // and the underlying shares worth the rest of its value, capped by those held (issue #28:
      // the last holder can request everything, whatever the split).
      const value = preview?.() ?? 0n;
      const supply = pre.activeSupply() + pre.pendingFeeShares();
      expectedIdle = supply === 0n ? 0n : min((pre.idle() * amount) / supply, value);
      expectedUShares = min(uConvertToShares(value - expectedIdle), pre.held());
      // Dust (worth no underlying share) is a request too: claimable at once, paying its idle part.
      expectOk = m.isAsync && amount > 0n && amount <= balance + ownPendingFee;
    }

    // ---- mine
    const hashes = await sendAndMine(txs);
    if (process.env.ENGINE_FUZZ_TRACE) console.log(this.step, JSON.stringify(op, bigintJson));
    // ---- C: the state after
    const c = new ReadBatch(lane().batchRpc);
    const engC = (fn: string, args: readonly unknown[] = []) => this.readEngine(c, fn, args);
    const post = {
      totalSupply: engC('totalSupply'),
      totalAssets: engC('totalAssets'),
      activeAssets: engC('activeAssets'),
      activeSupply: engC('activeSupply'),
      idle: engC('idleAssets'),
      held: engC('heldUnderlyingShares'),
      pending: engC('pendingUnderlyingShares'),
      escrowed: engC('escrowedShares'),
      reserved: engC('reservedAssets'),
      mark: engC('highWaterMark'),
      pendingFeeShares: engC('pendingFeeShares'),
      s: c.call<number>(m.engine, engineAbi, 'serviceFeeBps'),
      p: c.call<number>(m.engine, engineAbi, 'partnerFeeBps'),
      effectiveAt: engC('feeChangeEffectiveAt'),
      schedS: c.call<number>(m.engine, engineAbi, 'scheduledServiceFeeBps'),
      schedP: c.call<number>(m.engine, engineAbi, 'scheduledPartnerFeeBps'),
      paused: c.call<boolean>(m.engine, engineAbi, 'paused'),
      deprecated: c.call<boolean>(m.engine, engineAbi, 'deprecated'),
      assetOfEngine: c.call<bigint>(lane().fx.asset, assetAbi, 'balanceOf', [m.engine]),
      uOfEngine: c.call<bigint>(m.vault, vaultAbi, 'balanceOf', [m.engine]),
      uEscrow: c.call<bigint>(m.vault, vaultAbi, 'balanceOf', [m.vault]),
      engineOwnShares: engC('balanceOf', [m.engine]),
      seedShares: engC('balanceOf', [SEED_HOLDER]),
      balances: new Map(HOLDERS.map((h) => [h, engC('balanceOf', [h])])),
      assetOfReceiver: c.call<bigint>(lane().fx.asset, assetAbi, 'balanceOf', [receiver]),
      assetOfActor: c.call<bigint>(lane().fx.asset, assetAbi, 'balanceOf', [actor]),
      request:
        op.kind === 'request'
          ? c.call<{ underlyingShares: bigint; shares: bigint; controller: Address }>(
              m.engine,
              engineAbi,
              'redeemRequest',
              [pre.nextRequestId()],
            )
          : undefined,
      terms:
        op.kind === 'request'
          ? c.call<{ idleAssets: bigint; baseAssets: bigint; feeBps: bigint }>(
              m.engine,
              engineAbi,
              'requestTerms',
              [pre.nextRequestId()],
            )
          : undefined,
      uTotalAssets: c.call<bigint>(m.vault, vaultAbi, 'totalAssets'),
      uTotalSupply: c.call<bigint>(m.vault, vaultAbi, 'totalSupply'),
      // Bystanders' balances do not move: their value is read at the balance held before.
      values: new Map(HOLDERS.map((h) => [h, engC('convertToAssets', [m.balances.get(h) ?? 0n])])),
      receipts: hashes.map((h) => c.raw('eth_getTransactionReceipt', [h], toReceipt)),
    };
    // The ERC-7540 views of a few open requests each step (in turn), not all: speed.
    const open = [...m.requests.values()];
    const viewed =
      open.length <= 4
        ? open
        : [0, 1, 2, 3].map((i) => open[(this.step + i * 7) % open.length] as OpenRequest);
    const openViews = viewed.map((r) => ({
      r,
      pending: this.readEngine(c, 'pendingRedeemRequest', [r.id, r.controller]),
      claimable: this.readEngine(c, 'claimableRedeemRequest', [r.id, r.controller]),
    }));
    await c.run();
    const receipts = post.receipts.map((r) => r());
    const ok = receipts.every((r) => r.status === 'success');
    if (!ok) this.figures.reverted++;
    if (
      txs.length > 0 &&
      ![
        'yield',
        'loss',
        'pause',
        'upstreamPause',
        'exitHalt',
        'donateAsset',
        'donateUnderlying',
        'transfer',
        'donateShares',
      ].includes(op.kind)
    ) {
      this.check(ok === expectOk, `${op.kind} ${expectOk ? 'must succeed' : 'must revert'}`, () =>
        JSON.stringify(op, bigintJson),
      );
    } else {
      this.check(ok, `${op.kind} succeeds`, () => JSON.stringify(op, bigintJson));
    }

    const logs = receipts.flatMap((r) => engineLogs(r.logs, m.engine));

    // The underlying's ERC-4626 conversion (no decimals offset), at the block after the op.
    const uValue = (shares: bigint) =>
      (shares * (post.uTotalAssets() + 1n)) / (post.uTotalSupply() + 1n);
    const heldValue = () => uValue(post.held());
    const pendingValue = () => uValue(post.pending());

    // ---- per-op checks
    const ev = (name: string) => logs.filter((l) => l.eventName === name);
    if (op.kind === 'claim' && claimCovered) {
      this.check(ok, "no user's claim is blocked by another's pending request", () =>
        JSON.stringify(op, bigintJson),
      );
    }
    // Pooled underlying: a request, a claim or accrueFees() first settles what the vault made
    // claimable, at the price the vault fulfilled it at; the checkpoint keeps the pool's price.
    if (m.pooled && ok && (op.kind === 'request' || op.kind === 'claim' || op.kind === 'accrue')) {
      const claimable = pre.uClaimable?.() ?? 0n;
      const swept = m.exitsHalted ? 0n : min(claimable, m.queued - m.settled);
      const settledEv = ev('RequestsSettled');
      if (swept > 0n) {
        const all = pre.uClaimableAssets?.() ?? 0n;
        const assets = swept === claimable ? all : (all * swept) / claimable;
        const supply = pre.activeSupply() + pre.pendingFeeShares();
        const last = m.checkpoints[m.checkpoints.length - 1];
        m.settled += swept;
        m.checkpoints.push({
          cumShares: m.settled,
          cumAssets: (last?.cumAssets ?? 0n) + assets,
          poolPrice: supply === 0n ? 0n : (pre.activeAssets() * PRICE_SCALE) / supply,
        });
        m.settledUnpaid += assets;
        this.eq(settledEv.length, 1, 'the engine settles what the vault made claimable');
        this.eq(
          (settledEv[0]?.args.assets as bigint | undefined) ?? -1n,
          assets,
          'settled at the price the vault fulfilled at',
        );
      } else {
        this.eq(settledEv.length, 0, 'nothing to settle');
      }
    }
    // A round trip's second call accrues again (the deposit grew the supply): the model is of the first.
    // A claim's request fee (issue #28) is minted after RequestFeeCharged: checked with the claim.
    const firstLogs = engineLogs(receipts[0]?.logs ?? [], m.engine);
    const requestFeeAt = firstLogs.findIndex((l) => l.eventName === 'RequestFeeCharged');
    const fee = (requestFeeAt < 0 ? firstLogs : firstLogs.slice(0, requestFeeAt)).filter(
      (l) => l.eventName === 'FeesAccrued',
    );
    if (ok && accrues) {
      if (model.feeShares === 0n) {
        this.eq(
          fee.length,
          0,
          model.atOrBelow ? 'no fee at or below the mark' : 'no fee when it rounds to zero',
        );
      } else {
        this.eq(fee.length, 1, 'one fee accrual');
        const e = fee[0]?.args ?? {};
        const [ss, ps, sa, pa] = [
          e.serviceShares,
          e.partnerShares,
          e.serviceAssets,
          e.partnerAssets,
        ] as bigint[];
        const total = m.fees.s + m.fees.p;
        this.eq((ss ?? 0n) + (ps ?? 0n), model.feeShares, 'minted fee shares = the fee model');
        this.eq((sa ?? 0n) + (pa ?? 0n), model.feeAssets, 'fee assets = the fee model');
        this.eq(ss ?? 0n, (model.feeShares * m.fees.s) / total, 'fee shares split exactly');
        this.eq(sa ?? 0n, (model.feeAssets * m.fees.s) / total, 'fee assets split exactly');
        // Independent of the formula: never more than bps of the gain above the mark, and the
        // minted shares are worth the fee.
        this.check(
          model.feeAssets * BPS * PRICE_SCALE <=
            (model.assets * PRICE_SCALE - m.mark * model.supply) * total,
          'fee <= bps x gain above the mark',
        );
        const worth = (model.feeShares * model.assets) / (model.supply + model.feeShares);
        this.check(
          worth <= model.feeAssets && worth + 1n >= model.feeAssets,
          'minted fee shares are worth the fee',
          () => `${worth} vs ${model.feeAssets}`,
        );
        this.eq(e.highWaterMark as bigint, model.newMark, 'mark moved by the charged gain');
      }
      // An accrual leaves nothing to accrue in its block (so previews priced before a call hold).
      if (op.kind === 'accrue') {
        this.eq(post.pendingFeeShares(), 0n, 'nothing left to accrue after an accrual');
      }
      if (feeApply) {
        const price = ((post.activeAssets() + 1n) * PRICE_SCALE) / (post.activeSupply() + OFFSET);
        this.eq(post.mark(), max(model.newMark, price), 'fee change: mark at the price');
      } else {
        if (op.kind !== 'roundtrip') {
          this.eq(post.mark(), model.newMark, 'high-water mark after accrual');
        }
      }
    } else {
      this.eq(fee.length, 0, 'no fee without accrual');
      this.eq(post.mark(), m.mark, 'mark unchanged without accrual');
    }
    this.check(post.mark() >= m.mark, 'the mark never falls');
    m.mark = post.mark();

    const deltaReceiver = post.assetOfReceiver() - assetOfReceiver();
    if (ok) {
      switch (op.kind) {
        case 'deposit': {
          const e = ev('Deposit')[0]?.args ?? {};
          this.eq(e.shares as bigint, preview?.() ?? -1n, 'previewDeposit = deposit');
          this.eq(deltaReceiver, -amount, 'deposit takes the assets');
          break;
        }
        case 'mint': {
          const e = ev('Deposit')[0]?.args ?? {};
          this.eq(e.assets as bigint, preview?.() ?? -1n, 'previewMint = mint');
          this.eq(e.shares as bigint, amount, 'mint mints the shares');
          break;
        }
        case 'withdraw': {
          const e = ev('Withdraw')[0]?.args ?? {};
          this.eq(e.shares as bigint, preview?.() ?? -1n, 'previewWithdraw = withdraw');
          this.eq(deltaReceiver, amount, 'withdraw pays the assets');
          break;
        }
        case 'redeem': {
          const e = ev('Withdraw')[0]?.args ?? {};
          this.eq(e.assets as bigint, preview?.() ?? -1n, 'previewRedeem = redeem');
          this.eq(deltaReceiver, e.assets as bigint, 'redeem pays what it says');
          break;
        }
        case 'roundtrip':
          this.check(
            deltaReceiver <= 0n,
            'redeem(deposit(a)) <= a',
            () => `gained ${deltaReceiver}`,
          );
          break;
        case 'request': {
          const e = ev('RedeemRequested')[0]?.args ?? {};
          const id = e.requestId as bigint;
          this.eq(e.shares as bigint, amount, 'RedeemRequested shares');
          this.eq(getAddress(e.controller as string), actor, 'RedeemRequested controller');
          const rec = post.request?.();
          this.eq(
            rec?.underlyingShares ?? -1n,
            expectedUShares,
            'request takes the underlying shares its engine shares are worth',
          );
          const terms = post.terms?.();
          this.eq(
            terms?.idleAssets ?? -1n,
            expectedIdle,
            'request takes its share of the idle asset',
          );
          // Fee-free base: the value at request, or at the high-water mark when below it.
          const base = max(preview?.() ?? 0n, (amount * post.mark()) / PRICE_SCALE);
          this.eq(terms?.baseAssets ?? -1n, base, 'request base = max(value, value at the mark)');
          this.eq(terms?.feeBps ?? -1n, m.fees.s + m.fees.p, 'request keeps the fee in force');
          m.requests.set(id, {
            id,
            controller: actor,
            shares: amount,
            uShares: expectedUShares,
            settleAt: lane().fx.now - 1 + (expectedUShares === 0n ? 0 : SETTLEMENT),
            idle: expectedIdle,
            base,
            feeBps: m.fees.s + m.fees.p,
            queueStart: m.queued,
          });
          if (m.pooled) m.queued += expectedUShares;
          break;
        }
        case 'claim': {
          const r = m.requests.get(op.id) as OpenRequest;
          const e = ev('Withdraw')[0]?.args ?? {};
          // The fee rule on requests (docs/engine.md): gross = idle part + what the underlying
          // shares pay; the fee is the lower fee (at request, at claim) on the gross above the
          // base; and the due never exceeds the shares' worth at the pool's real price.
          // Pooled: the request's interval of the queue valued checkpoint by checkpoint (each
          // fulfilment's own price), and the pool's price at the checkpoint that completed it.
          const poolSupply = pre.activeSupply() + pre.pendingFeeShares();
          let gross = r.idle + (owed?.() ?? 0n);
          let poolPrice = poolSupply === 0n ? 0n : (pre.activeAssets() * PRICE_SCALE) / poolSupply;
          if (m.pooled && r.uShares > 0n) {
            const end = r.queueStart + r.uShares;
            const settledPart =
              cumAssetsAt(m.checkpoints, end) - cumAssetsAt(m.checkpoints, r.queueStart);
            gross = r.idle + settledPart;
            poolPrice = m.checkpoints.find((k) => k.cumShares >= end)?.poolPrice ?? -1n;
            m.settledUnpaid -= settledPart;
          }
          const bps = min(r.feeBps, m.fees.s + m.fees.p);
          let due = gross > r.base ? gross - ((gross - r.base) * bps) / BPS : gross;
          if (poolPrice > 0n) due = min(due, (r.shares * poolPrice) / PRICE_SCALE);
          this.eq(e.assets as bigint, due, 'a claim pays exactly its due under the fee rule');
          this.eq(e.shares as bigint, r.shares, 'a claim burns the request shares');
          this.eq(deltaReceiver, due, 'the receiver gets exactly its due');
          const paid = e.assets as bigint;
          // Requesting early never beats staying in the pool after fees: the claim is at most
          // what the same shares were worth in the pool when the request settled (real price,
          // cross-multiplied): at the claim on an own-id underlying, at the checkpoint that
          // completed it on a pooled one (a settled request no longer shares the pool's later
          // gains or losses, as any exit).
          if (m.pooled && r.uShares > 0n) {
            if (poolPrice > 0n)
              this.check(
                paid * PRICE_SCALE <= r.shares * poolPrice,
                'requesting early never beats staying in the pool after fees',
                () => `${paid} vs pool at settlement ${(r.shares * poolPrice) / PRICE_SCALE}`,
              );
          } else if (poolSupply > 0n) {
            this.check(
              paid * poolSupply <= r.shares * pre.activeAssets(),
              'requesting early never beats staying in the pool after fees',
              () => `${paid} vs pool ${stayValue?.()}`,
            );
          }
          // ... and the fee taken is at least the fee on the request's own yield.
          const charged = ev('RequestFeeCharged')[0]?.args ?? {};
          const feeTaken = gross - paid;
          this.eq(
            (charged.feeAssets as bigint | undefined) ?? 0n,
            feeTaken,
            'RequestFeeCharged = gross - paid',
          );
          this.check(
            gross <= r.base || feeTaken >= ((gross - r.base) * bps) / BPS,
            'a request pays the fee on its yield',
          );
          m.requests.delete(op.id);
          break;
        }
        case 'setFees':
          if (op.s <= m.fees.s && op.p <= m.fees.p) {
            this.eq(ev('FeesUpdated').length, 1, 'a decrease applies at once (FeesUpdated)');
            m.fees = { s: op.s, p: op.p };
            if (m.scheduled)
              this.eq(ev('FeeChangeCancelled').length, 1, 'a scheduled increase is replaced');
            m.scheduled = null;
          } else {
            const e = ev('FeeChangeScheduled')[0]?.args ?? {};
            this.eq(
              e.effectiveAt as bigint,
              BigInt(lane().fx.now - 1 + FEE_DELAY),
              'an increase waits for its notice',
            );
            m.scheduled = { s: op.s, p: op.p, at: BigInt(lane().fx.now - 1 + FEE_DELAY) };
          }
          break;
        case 'applyFees':
          this.eq(ev('FeesUpdated').length, 1, 'applyFeeChange emits FeesUpdated');
          m.fees = { s: m.scheduled?.s ?? 0n, p: m.scheduled?.p ?? 0n };
          m.scheduled = null;
          break;
        case 'cancelFees':
          this.eq(ev('FeeChangeCancelled').length, 1, 'FeeChangeCancelled');
          m.scheduled = null;
          break;
        case 'pause':
          m.paused = op.on;
          break;
        case 'upstreamPause':
          m.upstreamPaused = op.on;
          break;
        case 'exitHalt':
          m.exitsHalted = op.on;
          break;
        case 'deprecate':
          m.deprecated = true;
          break;
        case 'fulfil':
          m.fulfilled += amount;
          break;
        default:
          break;
      }
    }

    // ---- invariants after every step
    let sum = post.engineOwnShares() + post.seedShares();
    for (const h of HOLDERS) sum += post.balances.get(h)?.() ?? 0n;
    this.eq(sum, post.totalSupply(), 'sum of balances = total supply');
    // The seed: minted once, by the first deposit or mint, and never moved after.
    if (pre.seedShares() > 0n)
      this.eq(post.seedShares(), pre.seedShares(), 'seed shares never move');
    else if (post.seedShares() > 0n) {
      this.check(
        (op.kind === 'deposit' || op.kind === 'mint' || op.kind === 'roundtrip') && ok,
        'seed shares minted by the first deposit or mint',
      );
    }
    this.eq(post.idle(), post.assetOfEngine() - post.reserved(), 'idle = asset balance - reserved');
    this.eq(post.held(), post.uOfEngine(), 'held = underlying share balance');
    this.eq(
      post.totalAssets(),
      post.idle() + heldValue() + pendingValue() + post.reserved(),
      'total assets = idle + value of held and pending underlying shares + reserved',
    );
    let openU = 0n;
    let openShares = 0n;
    let openIdle = 0n;
    for (const r of m.requests.values()) {
      openU += r.uShares;
      openShares += r.shares;
      openIdle += r.idle;
    }
    this.eq(
      post.reserved(),
      openIdle + m.settledUnpaid,
      'reserved asset = idle parts of open requests + settled and unclaimed',
    );
    if (m.pooled) {
      // Requested and not yet settled by the engine (fulfilled or not).
      this.eq(
        post.pending(),
        m.queued - m.settled,
        'pending underlying shares = queue not settled',
      );
    } else {
      this.eq(post.pending(), openU, 'pending underlying shares = sum of open requests');
    }
    this.eq(post.escrowed(), openShares, 'escrowed shares = sum of open requests');
    this.check(post.engineOwnShares() >= post.escrowed(), 'escrow held by the engine');
    if (m.pooled) {
      this.eq(
        post.uEscrow(),
        m.queued - m.fulfilled,
        'the underlying holds exactly the unfulfilled queue',
      );
    } else if (m.isAsync) {
      this.eq(post.uEscrow(), openU, 'the underlying holds exactly the open requests');
    }
    for (const { r, pending, claimable } of openViews) {
      if (!m.requests.has(r.id)) continue;
      const due = r.settleAt <= lane().fx.now - 1;
      this.eq(
        pending() + claimable(),
        r.shares,
        'ERC-7540 views: an open request is pending or claimable',
      );
      const end = r.queueStart + r.uShares;
      const settled = m.pooled
        ? end <= m.settled || (end <= m.fulfilled && !m.exitsHalted)
        : due && !m.exitsHalted;
      this.eq(
        claimable(),
        r.uShares === 0n || settled ? r.shares : 0n,
        'claimable once settled upstream and exits open',
      );
    }
    this.eq(BigInt(post.s()), m.fees.s, 'service fee in force');
    this.eq(BigInt(post.p()), m.fees.p, 'partner fee in force');
    this.eq(post.effectiveAt(), m.scheduled?.at ?? 0n, 'scheduled fee change time');
    this.eq(BigInt(post.schedS()), m.scheduled?.s ?? 0n, 'scheduled service fee');
    this.eq(BigInt(post.schedP()), m.scheduled?.p ?? 0n, 'scheduled partner fee');
    this.eq(post.paused(), m.paused, 'paused');
    this.eq(post.deprecated(), m.deprecated, 'deprecated');
    // Nobody else's assets pay for someone's exit, deposit or fee change.
    if (op.kind !== 'loss') {
      for (const h of HOLDERS) {
        if (involved.has(h) || (accrues && (h === SERVICE || h === PARTNER))) continue;
        const before = pre.values.get(h)?.() ?? 0n;
        const after = post.values.get(h)?.() ?? 0n;
        this.eq(
          post.balances.get(h)?.() ?? 0n,
          m.balances.get(h) ?? 0n,
          `${op.kind} leaves a bystander's balance`,
        );
        this.check(
          after + 2n >= before,
          `${op.kind} takes nothing from a bystander`,
          () => `${before} -> ${after}`,
        );
      }
    }
    for (const h of HOLDERS) m.balances.set(h, post.balances.get(h)?.() ?? 0n);
  }

  private skip(): void {
    this.figures.byKind.skipped = (this.figures.byKind.skipped ?? 0) + 1;
  }

  /**
   * Deprecated and paused: every holder, fee recipients included, exits in full. The others' exits
   * accrue fees (the yield keeps coming while they are in), so the fee recipients may hold new
   * shares after their own exit: passes repeat until nobody holds any (a few at most).
   */
  async exitAll(): Promise<void> {
    const { m } = this;
    if (m.exitsHalted) await this.run({ kind: 'exitHalt', on: false });
    if (!m.deprecated) await this.run({ kind: 'deprecate' });
    if (!m.paused) await this.run({ kind: 'pause', on: true });
    const holding = () => HOLDERS.filter((h) => (m.balances.get(h) ?? 0n) > 0n);
    for (let pass = 0; pass < 3 && (holding().length > 0 || m.requests.size > 0); pass++) {
      // The fee recipients may hold shares minted by the others' exits (yield keeps coming, e.g. on
      // engine shares donated to the engine, which nobody can redeem): a second pass without yield.
      if (pass === 1) await this.run({ kind: 'yield', seconds: 1, aprBps: 0 });
      for (const h of holding()) {
        await this.run({ kind: 'redeem', actor: h, ppm: 'max' });
        if (m.isAsync && (m.balances.get(h) ?? 0n) > 0n) {
          await this.run({ kind: 'request', actor: h, ppm: 'all' });
        }
        this.eq(m.balances.get(h) ?? 0n, 0n, `${h} exits in full at once`);
      }
      if (m.requests.size > 0) await this.run({ kind: 'yield', seconds: SETTLEMENT + 1 });
      if (m.pooled && m.queued > m.fulfilled) await this.run({ kind: 'fulfil', ppm: PPM });
      for (const r of [...m.requests.values()]) {
        await this.run({ kind: 'claim', id: r.id, receiver: r.controller });
      }
    }
    for (const h of HOLDERS) {
      this.eq(m.balances.get(h) ?? 0n, 0n, `${h} exits a deprecated, paused engine in full`);
    }
    this.eq(m.requests.size, 0, 'every request claimed');
  }
}

function actorOf(op: Op): Address {
  switch (op.kind) {
    case 'deposit':
    case 'mint':
    case 'withdraw':
    case 'redeem':
    case 'roundtrip':
    case 'request':
    case 'accrue':
    case 'applyFees':
      return op.actor;
    case 'transfer':
    case 'donateShares':
      return op.from;
    case 'claim':
      return op.receiver;
    default:
      return DONOR;
  }
}

const min = (x: bigint, y: bigint) => (x < y ? x : y);

/** The engine's cumulative settled assets for the first `x` queued underlying shares. */
function cumAssetsAt(
  checkpoints: readonly { cumShares: bigint; cumAssets: bigint }[],
  x: bigint,
): bigint {
  if (x === 0n) return 0n;
  const k = checkpoints.findIndex((c) => c.cumShares >= x);
  const cur = checkpoints[k];
  if (!cur) return -1n;
  const prev = k > 0 ? checkpoints[k - 1] : undefined;
  const [ps, pa] = [prev?.cumShares ?? 0n, prev?.cumAssets ?? 0n];
  return pa + ((x - ps) * (cur.cumAssets - pa)) / (cur.cumShares - ps);
}
const max = (x: bigint, y: bigint) => (x > y ? x : y);
const bigintJson = (_: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

async function deployFuzzEngine(kind: Kind): Promise<Model> {
  const vault =
    kind === 'sync'
      ? lane().fx.syncVault
      : kind === 'async'
        ? lane().fx.asyncVault
        : lane().pooledVault;
  const data = encodeDeployData({
    abi: yieldEngineAbi,
    bytecode: yieldEngineBytecode,
    args: engineConstructorArgs({
      asset: lane().fx.asset,
      underlyingVault: vault,
      name: 'Fuzz',
      symbol: 'yF',
      serviceFeeRecipient: SERVICE,
      partnerFeeRecipient: PARTNER,
      serviceFeeBps: 500,
      partnerFeeBps: 1000,
      operator: OPERATOR,
      feeChangeDelaySeconds: FEE_DELAY,
    }),
  });
  const hash = (await lane().fx.rpc('eth_sendTransaction', [
    { from: OPERATOR, data, gas: '0x1c9c380' },
  ])) as Hex;
  await lane().fx.rpc('evm_setNextBlockTimestamp', [lane().fx.now++]);
  await lane().fx.rpc('evm_mine', []);
  const receipt = (await lane().fx.rpc('eth_getTransactionReceipt', [hash])) as {
    contractAddress: Address;
    status: Hex;
  };
  if (receipt.status !== '0x1') throw new Error('engine deployment reverted');
  const engine = getAddress(receipt.contractAddress);
  await mine(
    [...WALLETS, SERVICE, PARTNER, DONOR].map((from) => ({
      from,
      to: lane().fx.asset,
      data: enc(assetAbi, 'approve', [engine, maxUint256]),
    })),
  );
  const mark = (await lane().fx.client.readContract({
    address: engine,
    abi: yieldEngineAbi,
    functionName: 'highWaterMark',
  })) as bigint;
  return {
    engine,
    vault,
    isAsync: kind !== 'sync',
    pooled: kind === 'pooled',
    queued: 0n,
    fulfilled: 0n,
    settled: 0n,
    checkpoints: [],
    settledUnpaid: 0n,
    fees: { s: 500n, p: 1000n },
    scheduled: null,
    paused: false,
    deprecated: false,
    upstreamPaused: false,
    exitsHalted: false,
    requests: new Map(),
    balances: new Map(HOLDERS.map((h) => [h, 0n])),
    mark,
  };
}

async function runSeed(seed: string, kind: Kind, ops: number): Promise<Figures> {
  const started = performance.now();
  // Every seed starts from the same fixture: fresh vaults, funded wallets.
  const l = lane();
  await l.fx.rpc('evm_revert', [l.baseSnapshot]);
  l.baseSnapshot = (await l.fx.rpc('evm_snapshot', [])) as string;
  const m = await deployFuzzEngine(kind);
  const prng = createPrng(seed);
  const run = new SeedRun(prng, m, seed, kind);
  // Start with some holders so that exits have something to do.
  for (const w of WALLETS.slice(0, 3))
    await run.run({ kind: 'deposit', actor: w, amount: 10_000n * USD });
  const deprecateFrom = Math.floor(ops * 0.7);
  while (run.figures.operations < ops) {
    await run.run(run.pick(run.figures.operations >= deprecateFrom));
  }
  await run.exitAll();
  run.figures.ms = Math.round(performance.now() - started);
  return run.figures;
}

describe('engine property fuzz', () => {
  it(`${TOTAL_OPS} seeded operations over ${SEED_COUNT} seeds (sync and ERC-7540 underlyings): every invariant after every step`, async () => {
    const started = performance.now();
    const all: Figures[] = new Array(SEED_COUNT);
    // Seed i runs on lane i % LANE_COUNT, after the lane's earlier seeds; the lanes run side by side.
    await Promise.all(
      lanes.map((l, laneIndex) =>
        laneStore.run(l, async () => {
          for (let i = laneIndex; i < SEED_COUNT; i += LANE_COUNT) {
            const kind: Kind = (['sync', 'async', 'pooled'] as const)[i % 3] ?? 'sync';
            const f = await runSeed(
              `${SEED_PREFIX}-${kind}-${Math.floor(i / 3) + 1}`,
              kind,
              OPS_PER_SEED,
            );
            all[i] = f;
            console.log(
              `engine fuzz seed ${f.seed}: ${f.operations} operations, ${f.checks} checks, ${f.violations.length} violations, ${f.reverted} reverted calls (a violation unless predicted), ${(f.ms / 1000).toFixed(1)} s; ops ${JSON.stringify(f.byKind)}`,
            );
            for (const v of f.violations) console.log(`  violation: ${v}`);
          }
        }),
      ),
    );
    const total = all.reduce(
      (t, f) => ({
        ops: t.ops + f.operations,
        checks: t.checks + f.checks,
        violations: t.violations + f.violations.length,
        ms: t.ms + f.ms,
      }),
      { ops: 0, checks: 0, violations: 0, ms: 0 },
    );
    console.log(
      `engine fuzz total: ${SEED_COUNT} seeds on ${LANE_COUNT} anvils, ${total.ops} operations, ${total.checks} checks, ${total.violations} violations, ${(total.ms / 1000).toFixed(1)} s of seeds in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    expect(total.ops).toBeGreaterThanOrEqual(TOTAL_OPS);
    expect(all.flatMap((f) => f.violations.map((v) => `${f.seed} ${v}`))).toEqual([]);
  }, 1_800_000);
});
