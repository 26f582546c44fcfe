/**
 * @partner-yield/sdk/engine: headless helpers for a partner's own deposit/withdraw UI. From a
 * product as the API describes it, they build the transactions the user's wallet sends (approve
 * only when the allowance is short, then deposit; redeem or withdraw; on an asynchronous engine,
 * request a redeem and claim it once settled), preview what each will give, and decode what it
 * did. No ABI work on the partner's side. viem is a peer dependency of this entry only.
 */
import {
  type Account,
  type Address,
  type BlockTag,
  type Chain,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hash,
  type Hex,
  type PublicClient,
  parseEventLogs,
  parseUnits,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
} from 'viem';
import { PartnerYieldError } from '../errors.ts';
import { engineAbi } from '../generated/engine-abi.ts';
import type { Product } from '../types.ts';

export { erc20Abi } from 'viem';
export { engineAbi } from '../generated/engine-abi.ts';

/** The product fields the helpers read (a Product from the client fits). */
export type EngineProduct = Pick<
  Product,
  'slug' | 'chain_id' | 'engine_contract_address' | 'asset_address' | 'asset_decimals' | 'status'
>;

/** One transaction for the user's wallet to send, in order. */
export interface EngineCall {
  to: Address;
  data: Hex;
  /** What it does, for the UI (`approve`, `deposit`, `redeem`, …). */
  kind: 'approve' | 'deposit' | 'redeem' | 'withdraw' | 'requestRedeem' | 'claimRedeem';
}

export interface PreviewOptions {
  /** Block to preview at; `pending` previews against the next block. Default `latest`. */
  blockTag?: BlockTag;
}

/** Any viem public client (or wagmi's) of the product's chain: only its reads are used. */
type ChainReader = Pick<PublicClient, 'readContract'>;

/** Parses a decimal string in whole asset units (`"1250.5"`) into base units, exactly. */
export function parseAssets(product: Pick<Product, 'asset_decimals'>, amount: string): bigint {
  if (!/^[0-9]+(\.[0-9]+)?$/.test(amount)) {
    throw new PartnerYieldError(
      'invalid_amount',
      'amount must be a plain decimal string in whole asset units.',
    );
  }
  const fraction = amount.split('.')[1] ?? '';
  if (fraction.length > product.asset_decimals) {
    throw new PartnerYieldError(
      'invalid_amount',
      `amount has more than ${product.asset_decimals} decimals.`,
    );
  }
  return parseUnits(amount, product.asset_decimals);
}

function engineOf(product: EngineProduct): Address {
  if (product.status === 'pending_deploy' || !product.engine_contract_address) {
    throw new PartnerYieldError('engine_not_deployed', `${product.slug} is not deployed yet.`);
  }
  return getAddress(product.engine_contract_address);
}

/** Deposits are offered only while active (DECISIONS: paused no deposit, deprecated withdraw only). */
function depositable(product: EngineProduct): Address {
  const engine = engineOf(product);
  if (product.status === 'paused') {
    throw new PartnerYieldError('product_paused', `${product.slug} is paused: no deposits.`);
  }
  if (product.status === 'deprecated') {
    throw new PartnerYieldError(
      'product_deprecated',
      `${product.slug} is deprecated: withdrawals only.`,
    );
  }
  return engine;
}

export interface DepositPlan {
  calls: EngineCall[];
  /** Shares the deposit gives at the previewed block. */
  previewShares: bigint;
}

export interface RedeemPlan {
  calls: EngineCall[];
  /** True when the engine redeems in two steps: request now, claim once settled. */
  async: boolean;
  /** Assets the shares are worth at the previewed block (paid at claim on an async engine). */
  previewAssets: bigint;
}

/** Headless helpers for one product's engine, reading through `publicClient`. */
export function createEngineHelpers(product: EngineProduct, publicClient: ChainReader) {
  const read = <const F extends string>(
    functionName: F,
    args: readonly unknown[],
    o?: PreviewOptions,
  ) =>
    publicClient.readContract({
      address: engineOf(product),
      abi: engineAbi,
      functionName: functionName as never,
      args: args as never,
      ...(o?.blockTag ? { blockTag: o.blockTag } : {}),
    }) as Promise<unknown>;

  const helpers = {
    product,
    /** Shares a deposit of `assets` (base units) gives. */
    previewDeposit: async (assets: bigint, o?: PreviewOptions) =>
      (await read('previewDeposit', [assets], o)) as bigint,
    /** Assets a redeem of `shares` gives. */
    previewRedeem: async (shares: bigint, o?: PreviewOptions) =>
      (await read('previewRedeem', [shares], o)) as bigint,
    /** Shares a withdrawal of `assets` burns. */
    previewWithdraw: async (assets: bigint, o?: PreviewOptions) =>
      (await read('previewWithdraw', [assets], o)) as bigint,
    /** The user's shares, and the most they can redeem or withdraw now. */
    async balances(owner: Address, o?: PreviewOptions) {
      const [shares, maxRedeem, maxWithdraw] = await Promise.all([
        read('balanceOf', [owner], o),
        read('maxRedeem', [owner], o),
        read('maxWithdraw', [owner], o),
      ]);
      return {
        shares: shares as bigint,
        maxRedeem: maxRedeem as bigint,
        maxWithdraw: maxWithdraw as bigint,
      };
    },
    /** True when redeeming is a request followed by a claim. */
    isAsync: async () => (await read('isAsync', [])) as boolean,
    /** Unix time (seconds) from which a redeem request can be claimed. */
    claimableAt: async (requestId: bigint) => (await read('claimableAt', [requestId])) as bigint,

    /** Approve (only when the allowance is short) then deposit `assets` for `receiver`. */
    async buildDeposit(
      params: { owner: Address; assets: bigint; receiver?: Address } & PreviewOptions,
    ): Promise<DepositPlan> {
      const engine = depositable(product);
      if (params.assets <= 0n)
        throw new PartnerYieldError('invalid_amount', 'assets must be above 0.');
      const asset = getAddress(product.asset_address);
      const [allowance, previewShares] = await Promise.all([
        publicClient.readContract({
          address: asset,
          abi: erc20Abi,
          functionName: 'allowance',
          args: [params.owner, engine],
        }),
        helpers.previewDeposit(params.assets, params),
      ]);
      const calls: EngineCall[] = [];
      if (allowance < params.assets) {
        calls.push({
          kind: 'approve',
          to: asset,
          // Exactly the amount: no standing allowance is left behind.
          data: encodeFunctionData({
            abi: erc20Abi,
            functionName: 'approve',
            args: [engine, params.assets],
          }),
        });
      }
      calls.push({
        kind: 'deposit',
        to: engine,
        data: encodeFunctionData({
          abi: engineAbi,
          functionName: 'deposit',
          args: [params.assets, params.receiver ?? params.owner],
        }),
      });
      return { calls, previewShares };
    },

    /**
     * Redeem `shares`: one `redeem` on a synchronous engine; a `requestRedeem` on an asynchronous
     * one (claim it with buildClaim once claimableAt has passed).
     */
    async buildRedeem(
      params: { owner: Address; shares: bigint; receiver?: Address } & PreviewOptions,
    ): Promise<RedeemPlan> {
      const engine = engineOf(product);
      const [async, previewAssets] = await Promise.all([
        helpers.isAsync(),
        helpers.previewRedeem(params.shares, params),
      ]);
      const receiver = params.receiver ?? params.owner;
      const data = async
        ? encodeFunctionData({
            abi: engineAbi,
            functionName: 'requestRedeem',
            args: [params.shares, receiver, params.owner],
          })
        : encodeFunctionData({
            abi: engineAbi,
            functionName: 'redeem',
            args: [params.shares, receiver, params.owner],
          });
      return {
        calls: [{ kind: async ? 'requestRedeem' : 'redeem', to: engine, data }],
        async,
        previewAssets,
      };
    },

    /** Withdraw exactly `assets` (synchronous engines; an asynchronous one redeems by request). */
    async buildWithdraw(
      params: { owner: Address; assets: bigint; receiver?: Address } & PreviewOptions,
    ) {
      const engine = engineOf(product);
      if (await helpers.isAsync()) {
        throw new PartnerYieldError(
          'async_redeem_required',
          `${product.slug} redeems by request: use buildRedeem, then buildClaim.`,
        );
      }
      const previewShares = await helpers.previewWithdraw(params.assets, params);
      const data = encodeFunctionData({
        abi: engineAbi,
        functionName: 'withdraw',
        args: [params.assets, params.receiver ?? params.owner, params.owner],
      });
      return { calls: [{ kind: 'withdraw', to: engine, data } as EngineCall], previewShares };
    },

    /** Claim a settled redeem request, paying `receiver`. */
    buildClaim(params: { requestId: bigint; receiver: Address }): { calls: EngineCall[] } {
      const data = encodeFunctionData({
        abi: engineAbi,
        functionName: 'claimRedeem',
        args: [params.requestId, params.receiver],
      });
      return { calls: [{ kind: 'claimRedeem', to: engineOf(product), data }] };
    },

    /** What a mined transaction did on this engine: deposits, withdrawals, requests and claims. */
    decodeReceipt(receipt: Pick<TransactionReceipt, 'logs'>) {
      const engine = engineOf(product).toLowerCase();
      const logs = parseEventLogs({
        abi: engineAbi,
        logs: receipt.logs.filter((l) => l.address.toLowerCase() === engine),
      });
      return {
        deposits: logs.filter((l) => l.eventName === 'Deposit').map((l) => l.args),
        withdrawals: logs.filter((l) => l.eventName === 'Withdraw').map((l) => l.args),
        redeemRequests: logs.filter((l) => l.eventName === 'RedeemRequested').map((l) => l.args),
        claims: logs.filter((l) => l.eventName === 'RedeemClaimed').map((l) => l.args),
      };
    },
  };
  return helpers;
}

export type EngineHelpers = ReturnType<typeof createEngineHelpers>;

/**
 * Gas the engine's fee accrual can add to a call between its estimate and its inclusion: the
 * estimate may price a block where no fee is due (the previous call accrued in the same second)
 * while the mined block charges one — four fee totals, two fee-share mints, the high-water mark
 * and an event. Measured on anvil: about 24,000 gas when every slot is already set, and up to
 * about 125,000 when the slots are written for the first time. Unused gas is not charged.
 */
export const FEE_ACCRUAL_GAS = 150_000n;

export interface SendCallsOptions {
  /**
   * Gas added to each call's estimate, in percent. Default 25. An engine call accrues fees and
   * interest for the time since the last one, so a call mined a few seconds after its estimate can
   * need more gas than estimated (an exact estimate then runs out of gas and reverts).
   */
  gasMarginPercent?: number;
  /**
   * Gas added on top of the percentage for the fee accrual, whose cost does not scale with the
   * call's. Default {@link FEE_ACCRUAL_GAS}.
   */
  accrualGas?: bigint;
}

/**
 * Sends the calls in order from `walletClient`'s account, waiting for each receipt (an approve
 * must be mined before the deposit that spends it), each with its gas estimate plus a margin
 * (a percentage and a fixed allowance for the fee accrual). Throws if one reverts; returns the
 * receipts.
 */
export async function sendCalls(
  walletClient: Pick<
    WalletClient<Transport, Chain | undefined, Account>,
    'sendTransaction' | 'account' | 'chain'
  >,
  publicClient: Pick<PublicClient, 'waitForTransactionReceipt' | 'estimateGas'>,
  calls: readonly EngineCall[],
  options: SendCallsOptions = {},
): Promise<TransactionReceipt[]> {
  const margin = BigInt(Math.round((options.gasMarginPercent ?? 25) * 100));
  const accrualGas = options.accrualGas ?? FEE_ACCRUAL_GAS;
  const receipts: TransactionReceipt[] = [];
  for (const call of calls) {
    // Estimated here, after the previous call is mined (a deposit cannot be estimated before the
    // approve it spends).
    const estimate = await publicClient.estimateGas({
      account: walletClient.account,
      to: call.to,
      data: call.data,
    });
    const hash: Hash = await walletClient.sendTransaction({
      account: walletClient.account,
      chain: walletClient.chain ?? null,
      to: call.to,
      data: call.data,
      gas: estimate + (estimate * margin) / 10_000n + accrualGas,
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') {
      throw new PartnerYieldError(
        'transaction_reverted',
        `The ${call.kind} transaction ${hash} reverted.`,
      );
    }
    receipts.push(receipt);
  }
  return receipts;
}

export {
  type ApprovalKind,
  atomicBatching,
  DepositLadderError,
  type DepositLadderParams,
  type DepositLadderResult,
  type DepositRung,
  depositWithLadder,
  type Eip1193Like,
  type LadderFailureStage,
  type LadderReceipt,
  type LadderStep,
  PERMIT_ROUTER_ADDRESS,
  permitRouterAbi,
} from './ladder.ts';
