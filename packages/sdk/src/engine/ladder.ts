/**
 * The deposit ladder: a deposit with as few wallet confirmations as the wallet and the asset allow.
 *
 * 1. `batch`: the wallet reports atomic batching (EIP-5792 `wallet_getCapabilities`, `atomic`
 *    `supported` or `ready` on the product's chain): approve and deposit go in one
 *    `wallet_sendCalls` with `atomicRequired`, one confirmation, followed with
 *    `wallet_getCallsStatus` until the batch is final.
 * 2. `permit`: otherwise, when the asset supports EIP-2612 and the chain has the permit deposit
 *    router: one `eth_signTypedData_v4` signature and one transaction
 *    (`PermitDepositRouter.depositWithPermit`).
 * 3. `transactions`: otherwise approve, then deposit, as two transactions.
 *
 * An allowance that already covers the amount skips the approval on every rung (a batch of the
 * deposit alone; no signature; the deposit transaction alone): `approval` says `existing_allowance`.
 *
 * Everything goes through one EIP-1193 provider (the user's wallet: `window.ethereum`, an EIP-6963
 * provider, a viem wallet client's `request`), reads included. A refusal or a failure at any step
 * throws a {@link DepositLadderError} that says in words what happened and what moved; nothing is
 * left half done (no funds move unless the deposit lands; an approval a user confirmed before
 * declining the deposit is exact and named in the message). The gas limit of each transaction is
 * the estimate + 25 % + {@link FEE_ACCRUAL_GAS} (the rule of `sendCalls`).
 */
import {
  type Address,
  decodeEventLog,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  keccak256,
  numberToHex,
  stringToHex,
} from 'viem';
import { PartnerYieldError } from '../errors.ts';
import { engineAbi } from '../generated/engine-abi.ts';
import { PERMIT_ROUTER_ADDRESS, permitRouterAbi } from '../generated/permit-router.ts';

export { PERMIT_ROUTER_ADDRESS, permitRouterAbi };

/** The EIP-1193 `request` the ladder uses (a wallet, or a viem client's `request`). */
export interface Eip1193Like {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
}

export type DepositRung = 'batch' | 'permit' | 'transactions';
export type ApprovalKind = 'in_batch' | 'permit' | 'transaction' | 'existing_allowance';

/** What the ladder is doing now, for a UI's progress (the embed shows these as steps). */
export type LadderStep =
  | { step: 'plan'; rung: DepositRung; approval: ApprovalKind }
  | { step: 'batch' | 'signature' | 'approve' | 'deposit'; state: 'wallet' }
  | { step: 'batch' | 'approve' | 'deposit'; state: 'pending'; txHash?: Hex; batchId?: string }
  | { step: 'batch' | 'signature' | 'approve' | 'deposit'; state: 'done'; txHash?: Hex };

export interface LadderReceipt {
  transactionHash: Hex;
  blockNumber: bigint;
  logs: Array<{ address: Address; topics: Hex[]; data: Hex }>;
}

export interface DepositLadderResult {
  rung: DepositRung;
  approval: ApprovalKind;
  /** Confirmations the user gave in the wallet (transactions, batches and signatures). */
  confirmations: number;
  /** The transaction that deposited (in a batch: the one that carried the deposit). */
  depositTxHash: Hex;
  /** Every transaction sent, in order (approve first when there was one). */
  txHashes: Hex[];
  /** The EIP-5792 batch id (rung `batch`). */
  batchId?: string;
  /** Shares minted to the receiver, from the engine's `Deposit` log. */
  shares: bigint;
  receipt: LadderReceipt;
}

export type LadderFailureStage = 'batch' | 'signature' | 'approve' | 'deposit';

/**
 * A deposit that did not happen. `code`: `user_rejected` (declined in the wallet),
 * `transaction_reverted`, `batch_failed`, or `wallet_error`. `approvalLeft` is true when an
 * approval transaction was mined before the deposit failed (exactly the amount, for the engine).
 */
export class DepositLadderError extends PartnerYieldError {
  override name = 'DepositLadderError';
  constructor(
    code: 'user_rejected' | 'transaction_reverted' | 'batch_failed' | 'wallet_error',
    message: string,
    readonly rung: DepositRung,
    readonly stage: LadderFailureStage,
    readonly approvalLeft: boolean,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

export interface DepositLadderParams {
  provider: Eip1193Like;
  /** The product (an API Product, or the embed's view). */
  product: {
    slug: string;
    chain_id: number;
    engine_contract_address?: string | null;
    asset_address: string;
    /** When given, paused and deprecated products refuse deposits (as `buildDeposit`). */
    status?: string;
  };
  owner: Address;
  /** Base units of the asset. */
  assets: bigint;
  receiver?: Address;
  /**
   * The chain's permit deposit router; default {@link PERMIT_ROUTER_ADDRESS} (the same on every
   * chain). Its code is checked before use; `null` turns the permit rung off.
   */
  permitRouter?: Address | null;
  /** Rungs the caller allows, default all three (e.g. `['transactions']` to force the old way). */
  rungs?: readonly DepositRung[];
  onStep?: (step: LadderStep) => void;
  /** Receipt and batch status polling interval, default 1000 ms. */
  pollIntervalMs?: number;
  /** Permit validity, default 20 minutes from the latest block. */
  permitSeconds?: number;
  /** Gas rule: estimate + margin % + accrual gas (defaults 25 and 150,000, as `sendCalls`). */
  gasMarginPercent?: number;
  accrualGas?: bigint;
}

const FEE_ACCRUAL = 150_000n;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rejected(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  return (
    e?.code === 4001 ||
    e?.code === 'ACTION_REJECTED' ||
    e?.cause?.code === 4001 ||
    /user (rejected|denied)/i.test(String((err as Error)?.message ?? ''))
  );
}

class Reverted extends Error {
  constructor(readonly txHash: Hex) {
    super(`transaction ${txHash} reverted`);
  }
}

/** Runs the ladder; resolves when the deposit is mined. */
export async function depositWithLadder(p: DepositLadderParams): Promise<DepositLadderResult> {
  const { provider, owner, assets } = p;
  if (assets <= 0n) throw new PartnerYieldError('invalid_amount', 'assets must be above 0.');
  if (!p.product.engine_contract_address) {
    throw new PartnerYieldError('engine_not_deployed', `${p.product.slug} is not deployed yet.`);
  }
  if (p.product.status === 'paused') {
    throw new PartnerYieldError('product_paused', `${p.product.slug} is paused: no deposits.`);
  }
  if (p.product.status === 'deprecated') {
    throw new PartnerYieldError(
      'product_deprecated',
      `${p.product.slug} is deprecated: withdrawals only.`,
    );
  }
  const engine = getAddress(p.product.engine_contract_address);
  const asset = getAddress(p.product.asset_address);
  const receiver = p.receiver ?? owner;
  const chainHex = numberToHex(p.product.chain_id);
  const allowed = new Set(p.rungs ?? ['batch', 'permit', 'transactions']);
  const pollMs = p.pollIntervalMs ?? 1000;
  const margin = BigInt(Math.round((p.gasMarginPercent ?? 25) * 100));
  const accrual = p.accrualGas ?? FEE_ACCRUAL;
  const rpc = <T>(method: string, params: unknown[]) =>
    provider.request({ method, params }) as Promise<T>;
  const call = async (to: Address, data: Hex) =>
    rpc<Hex>('eth_call', [{ to, data, from: owner }, 'latest']);
  const onStep = p.onStep ?? (() => {});

  const allowance = BigInt(
    await call(
      asset,
      encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [owner, engine] }),
    ),
  );
  const needsApproval = allowance < assets;
  const approveData = encodeFunctionData({
    abi: erc20Abi,
    functionName: 'approve',
    args: [engine, assets], // exactly the amount: no standing allowance is left behind
  });
  const depositData = encodeFunctionData({
    abi: engineAbi,
    functionName: 'deposit',
    args: [assets, receiver],
  });

  // Which rung: the wallet's capabilities first, then the asset's permit support.
  let rung: DepositRung = 'transactions';
  if (allowed.has('batch') && (await atomicBatching(provider, owner, chainHex))) rung = 'batch';
  let permit: PermitSupport | undefined;
  if (
    rung === 'transactions' &&
    needsApproval &&
    allowed.has('permit') &&
    p.permitRouter !== null
  ) {
    permit = await permitSupport(call, rpc, asset, owner, p.permitRouter ?? PERMIT_ROUTER_ADDRESS);
    if (permit) rung = 'permit';
  }
  if (!allowed.has(rung)) rung = 'transactions';
  const approval: ApprovalKind = !needsApproval
    ? 'existing_allowance'
    : rung === 'batch'
      ? 'in_batch'
      : rung === 'permit'
        ? 'permit'
        : 'transaction';
  onStep({ step: 'plan', rung, approval });

  async function receipt(hash: Hex): Promise<LadderReceipt> {
    for (;;) {
      const r = await rpc<{
        status: Hex;
        transactionHash: Hex;
        blockNumber: Hex;
        logs: LadderReceipt['logs'];
      } | null>('eth_getTransactionReceipt', [hash]);
      if (r) {
        if (r.status !== '0x1') throw new Reverted(hash);
        return {
          transactionHash: r.transactionHash,
          blockNumber: BigInt(r.blockNumber),
          logs: r.logs,
        };
      }
      await sleep(pollMs);
    }
  }

  async function send(to: Address, data: Hex): Promise<Hex> {
    // Estimated now, after the previous step is mined: a call that would revert fails here,
    // before the wallet asks the user.
    const estimate = BigInt(await rpc<Hex>('eth_estimateGas', [{ from: owner, to, data }]));
    const gas = estimate + (estimate * margin) / 10_000n + accrual;
    return rpc<Hex>('eth_sendTransaction', [{ from: owner, to, data, gas: numberToHex(gas) }]);
  }

  const minted = (r: LadderReceipt): bigint => {
    for (const l of r.logs) {
      if (l.address.toLowerCase() !== engine.toLowerCase()) continue;
      try {
        const e = decodeEventLog({ abi: engineAbi, data: l.data, topics: l.topics as [Hex] });
        if (e.eventName === 'Deposit') return (e.args as { shares: bigint }).shares;
      } catch {
        // another event of the engine
      }
    }
    throw new PartnerYieldError('unexpected_response', 'the deposit left no Deposit log');
  };

  let stage: LadderFailureStage = 'deposit';
  let approvalLeft = false;
  async function transactions(approvalKind: ApprovalKind): Promise<DepositLadderResult> {
    const txHashes: Hex[] = [];
    if (needsApproval) {
      stage = 'approve';
      onStep({ step: 'approve', state: 'wallet' });
      const hash = await send(asset, approveData);
      txHashes.push(hash);
      onStep({ step: 'approve', state: 'pending', txHash: hash });
      await receipt(hash);
      approvalLeft = true;
      onStep({ step: 'approve', state: 'done', txHash: hash });
    }
    stage = 'deposit';
    onStep({ step: 'deposit', state: 'wallet' });
    const hash = await send(engine, depositData);
    txHashes.push(hash);
    onStep({ step: 'deposit', state: 'pending', txHash: hash });
    const r = await receipt(hash);
    onStep({ step: 'deposit', state: 'done', txHash: hash });
    return {
      rung: 'transactions',
      approval: approvalKind,
      confirmations: txHashes.length,
      depositTxHash: hash,
      txHashes,
      shares: minted(r),
      receipt: r,
    };
  }

  try {
    if (rung === 'batch') {
      stage = 'batch';
      onStep({ step: 'batch', state: 'wallet' });
      const calls = [
        ...(needsApproval ? [{ to: asset, data: approveData, value: '0x0' }] : []),
        { to: engine, data: depositData, value: '0x0' },
      ];
      const sent = await rpc<string | { id: string }>('wallet_sendCalls', [
        { version: '2.0.0', chainId: chainHex, from: owner, atomicRequired: true, calls },
      ]);
      const batchId = typeof sent === 'string' ? sent : sent.id;
      onStep({ step: 'batch', state: 'pending', batchId });
      const status = await waitForBatch(rpc, batchId, pollMs);
      const receipts = status.receipts.map((r) => ({
        transactionHash: r.transactionHash,
        blockNumber: BigInt(r.blockNumber),
        logs: r.logs,
      }));
      const last = receipts.find((r) => {
        try {
          minted(r);
          return true;
        } catch {
          return false;
        }
      });
      if (!last)
        throw new PartnerYieldError('unexpected_response', 'the batch left no Deposit log');
      onStep({ step: 'batch', state: 'done', txHash: last.transactionHash });
      return {
        rung,
        approval,
        confirmations: 1,
        depositTxHash: last.transactionHash,
        txHashes: [...new Set(receipts.map((r) => r.transactionHash))],
        batchId,
        shares: minted(last),
        receipt: last,
      };
    }
    if (rung === 'permit' && permit) {
      stage = 'signature';
      onStep({ step: 'signature', state: 'wallet' });
      const block = await rpc<{ timestamp: Hex }>('eth_getBlockByNumber', ['latest', false]);
      const deadline = BigInt(block.timestamp) + BigInt(p.permitSeconds ?? 1200);
      const typed = {
        domain: { ...permit.domain, chainId: p.product.chain_id, verifyingContract: asset },
        types: {
          EIP712Domain: permit.domainFields,
          Permit: [
            { name: 'owner', type: 'address' },
            { name: 'spender', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'nonce', type: 'uint256' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'Permit',
        message: {
          owner,
          spender: permit.router,
          value: assets.toString(),
          nonce: permit.nonce.toString(),
          deadline: deadline.toString(),
        },
      };
      let signature: Hex | undefined;
      try {
        signature = await rpc<Hex>('eth_signTypedData_v4', [owner, JSON.stringify(typed)]);
      } catch (err) {
        // A wallet that cannot sign typed data (not a refusal): down to approve + deposit.
        if (!unsupportedMethod(err)) throw err;
      }
      if (signature === undefined) {
        rung = 'transactions';
        onStep({ step: 'plan', rung, approval: 'transaction' });
        return await transactions('transaction');
      }
      onStep({ step: 'signature', state: 'done' });
      // r ‖ s ‖ v, 65 bytes (sliced here: viem's parseSignature brings a whole curve library).
      const sig = {
        r: `0x${signature.slice(2, 66)}` as Hex,
        s: `0x${signature.slice(66, 130)}` as Hex,
      };
      const vByte = Number.parseInt(signature.slice(130, 132), 16);
      const v = vByte < 27 ? vByte + 27 : vByte;
      stage = 'deposit';
      onStep({ step: 'deposit', state: 'wallet' });
      const hash = await send(
        permit.router,
        encodeFunctionData({
          abi: permitRouterAbi,
          functionName: 'depositWithPermit',
          args: [engine, assets, receiver, deadline, v, sig.r, sig.s],
        }),
      );
      onStep({ step: 'deposit', state: 'pending', txHash: hash });
      const r = await receipt(hash);
      onStep({ step: 'deposit', state: 'done', txHash: hash });
      return {
        rung,
        approval,
        confirmations: 2,
        depositTxHash: hash,
        txHashes: [hash],
        shares: minted(r),
        receipt: r,
      };
    }
    return await transactions(approval);
  } catch (err) {
    if (err instanceof DepositLadderError) throw err;
    throw ladderError(err, rung, stage, approvalLeft);
  }
}

function unsupportedMethod(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return (
    code === 4200 ||
    code === -32601 ||
    /not supported|method not found|does not exist/i.test(String((err as Error)?.message ?? ''))
  );
}

function ladderError(
  err: unknown,
  rung: DepositRung,
  stage: LadderFailureStage,
  approvalLeft: boolean,
): DepositLadderError {
  const left = approvalLeft
    ? ' Your approval transaction went through: the product may take exactly that amount, and your next deposit of it needs no new approval.'
    : '';
  if (rejected(err)) {
    const what = {
      batch: 'the deposit (approve and deposit in one confirmation)',
      signature: 'the permit signature',
      approve: 'the approval',
      deposit: 'the deposit transaction',
    }[stage];
    return new DepositLadderError(
      'user_rejected',
      `You declined ${what} in your wallet. No funds moved.${left}`,
      rung,
      stage,
      approvalLeft,
      { cause: err },
    );
  }
  if (err instanceof Reverted || /revert/i.test(String((err as Error)?.message ?? ''))) {
    return new DepositLadderError(
      'transaction_reverted',
      `The network refused the ${stage === 'approve' ? 'approval' : 'deposit'}: it reverted, so no funds moved except the network fee.${left}`,
      rung,
      stage,
      approvalLeft,
      { cause: err },
    );
  }
  if (err instanceof BatchFailed) {
    return new DepositLadderError(
      'batch_failed',
      `The wallet could not complete the batch (status ${err.status}): nothing in it took effect, no funds moved.`,
      rung,
      stage,
      false,
      { cause: err },
    );
  }
  return new DepositLadderError(
    'wallet_error',
    `The wallet request failed: ${String((err as Error)?.message ?? err).split('\n')[0]}. No funds moved.${left}`,
    rung,
    stage,
    approvalLeft,
    { cause: err },
  );
}

/** EIP-5792: true when the wallet says it batches atomically on the chain. Any error: false. */
export async function atomicBatching(
  provider: Eip1193Like,
  owner: Address,
  chainHex: Hex,
): Promise<boolean> {
  try {
    const caps = (await provider.request({
      method: 'wallet_getCapabilities',
      params: [owner, [chainHex]],
    })) as Record<string, { atomic?: { status?: string }; atomicBatch?: { supported?: boolean } }>;
    const c = caps?.[chainHex] ?? caps?.[numberToHex(Number(chainHex))] ?? caps?.['0x0'];
    return (
      c?.atomic?.status === 'supported' ||
      c?.atomic?.status === 'ready' ||
      c?.atomicBatch?.supported === true
    );
  } catch {
    return false;
  }
}

class BatchFailed extends Error {
  constructor(readonly status: number) {
    super(`batch status ${status}`);
  }
}

interface BatchStatus {
  status: number;
  receipts: Array<{
    transactionHash: Hex;
    blockNumber: Hex;
    status: Hex;
    logs: LadderReceipt['logs'];
  }>;
}

/** Polls `wallet_getCallsStatus` until final: 200 confirmed; 4xx/5xx/6xx failed. */
async function waitForBatch(
  rpc: <T>(method: string, params: unknown[]) => Promise<T>,
  id: string,
  pollMs: number,
): Promise<BatchStatus> {
  for (;;) {
    const s = await rpc<BatchStatus>('wallet_getCallsStatus', [id]);
    if (s.status >= 200 && s.status < 300) {
      if (s.receipts.some((r) => r.status !== '0x1')) throw new BatchFailed(500);
      return s;
    }
    if (s.status >= 300) throw new BatchFailed(s.status);
    await sleep(pollMs);
  }
}

interface PermitSupport {
  router: Address;
  nonce: bigint;
  domain: { name: string; version: string };
  domainFields: Array<{ name: string; type: string }>;
}

/**
 * EIP-2612 support, checked rather than assumed: the router has code, the asset answers `nonces`
 * and `DOMAIN_SEPARATOR`, and the domain read from EIP-5267 `eip712Domain()` (or `name()` with
 * version "1") hashes to that separator. Undefined when any of it fails: the rung is skipped.
 */
async function permitSupport(
  call: (to: Address, data: Hex) => Promise<Hex>,
  rpc: <T>(method: string, params: unknown[]) => Promise<T>,
  asset: Address,
  owner: Address,
  router: Address,
): Promise<PermitSupport | undefined> {
  try {
    const code = await rpc<Hex>('eth_getCode', [router, 'latest']);
    if (!code || code === '0x') return undefined;
    const nonce = BigInt(
      await call(
        asset,
        encodeFunctionData({ abi: PERMIT_ABI, functionName: 'nonces', args: [owner] }),
      ),
    );
    const separator = await call(
      asset,
      encodeFunctionData({ abi: PERMIT_ABI, functionName: 'DOMAIN_SEPARATOR' }),
    );
    const chainId = BigInt(await rpc<Hex>('eth_chainId', []));
    let domain: PermitSupport['domain'];
    try {
      const d = decodeFunctionResult({
        abi: PERMIT_ABI,
        functionName: 'eip712Domain',
        data: await call(
          asset,
          encodeFunctionData({ abi: PERMIT_ABI, functionName: 'eip712Domain' }),
        ),
      });
      domain = { name: d[1], version: d[2] };
    } catch {
      const name = decodeFunctionResult({
        abi: PERMIT_ABI,
        functionName: 'name',
        data: await call(asset, encodeFunctionData({ abi: PERMIT_ABI, functionName: 'name' })),
      });
      domain = { name, version: '1' };
    }
    const domainFields = [
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
    ];
    const expected = keccak256(
      encodeAbiParameters(
        [
          { type: 'bytes32' },
          { type: 'bytes32' },
          { type: 'bytes32' },
          { type: 'uint256' },
          { type: 'address' },
        ],
        [
          keccak256(
            stringToHex(
              'EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)',
            ),
          ),
          keccak256(stringToHex(domain.name)),
          keccak256(stringToHex(domain.version)),
          chainId,
          asset,
        ],
      ),
    );
    if (expected.toLowerCase() !== separator.slice(0, 66).toLowerCase()) return undefined;
    return { router, nonce, domain, domainFields };
  } catch {
    return undefined;
  }
}

const PERMIT_ABI = [
  {
    type: 'function',
    name: 'nonces',
    stateMutability: 'view',
    inputs: [{ name: 'owner', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'DOMAIN_SEPARATOR',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ type: 'bytes32' }],
  },
  {
    type: 'function',
    name: 'name',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ type: 'string' }],
  },
  {
    type: 'function',
    name: 'eip712Domain',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'fields', type: 'bytes1' },
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
      { name: 'salt', type: 'bytes32' },
      { name: 'extensions', type: 'uint256[]' },
    ],
  },
] as const;
