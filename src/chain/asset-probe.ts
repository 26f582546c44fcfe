/**
 * The asset check a product passes before it is created (docs/engine.md, "The asset"): the engine
 * credits shares for exactly the assets a deposit sends, so an asset that delivers less than it
 * is sent (fee-on-transfer), or whose balances are not stored amounts (rebasing, share-based:
 * stETH, aTokens, AMPL), would let one holder's shortfall or drift fall on the others. The engine
 * itself refuses a fee-on-transfer deposit (AssetTransferShortfall); this check refuses such an
 * asset before anything is deployed, with the reason.
 *
 * Nothing is sent: every step is an `eth_call` at the latest block.
 * 1. `eth_createAccessList` of `balanceOf(probe)` lists the storage the balance is read from.
 * 2. Each slot listed is overridden in turn with a test amount; the slot that makes `balanceOf`
 *    answer exactly that amount is where balances are stored. When a slot moves the balance but
 *    not to that amount, balances are derived from something else (shares × index): rebasing.
 * 3. With that balance given to the probe address, and the AssetProbe contract's code placed
 *    there (state override), one call makes a `transfer` and a `transferFrom` and measures what
 *    arrived and what left: anything but the amount sent is a fee on transfer.
 * A node that refuses access lists or state overrides cannot be checked: that is said, and the
 * operator decides (`--skip-asset-check`).
 */
import {
  type Address,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  keccak256,
  numberToHex,
  toHex,
} from 'viem';
import { BaseError } from '../errors.ts';
import { scrubSecrets } from '../url-secrets.ts';
import { isRevertOrNoData } from './call-errors.ts';
import type { ChainClient } from './client.ts';
import { assetProbeAbi, assetProbeRuntimeCode } from './generated/AssetProbe.ts';

export type AssetCheckCode =
  | 'asset_fee_on_transfer'
  | 'asset_rebasing'
  | 'asset_mismatch'
  | 'asset_not_checked';

/** The asset cannot back a product (or could not be checked); `code` says which. */
export class AssetCheckError extends BaseError<AssetCheckCode> {
  override name = 'AssetCheckError';
  constructor(code: AssetCheckCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { cause: options.cause, retryable: false });
  }
}

/** Addresses nobody holds a key to, chosen so that no real state sits there. */
const PROBE = addressFrom('partner-yield asset probe');
const RECIPIENT = addressFrom('partner-yield asset probe recipient');

function addressFrom(label: string): Address {
  return getAddress(`0x${keccak256(toHex(label)).slice(-40)}`);
}

export interface AssetCheckInput {
  asset: Address;
  /** When given, its `asset()` must be `asset`. */
  underlying?: Address;
  /** When given, the asset's `decimals()` must equal it. */
  decimals?: number;
}

export interface AssetCheckResult {
  /** Where the balance of an address is stored (contract and slot). */
  balanceSlot: { address: Address; slot: Hex };
  /** The amount each probe transfer moved, and what arrived. */
  sent: bigint;
  delivered: bigint;
}

export async function checkAsset(
  client: ChainClient,
  input: AssetCheckInput,
): Promise<AssetCheckResult> {
  const asset = getAddress(input.asset);
  const decimals = await readOrExplain(
    () => client.readContract({ address: asset, abi: erc20Abi, functionName: 'decimals' }),
    `${asset} does not answer decimals(): is it an ERC-20 token on this chain?`,
    `decimals() of ${asset}`,
  );
  if (input.decimals !== undefined && decimals !== input.decimals) {
    throw new AssetCheckError(
      'asset_mismatch',
      `the asset has ${decimals} decimals on chain, not ${input.decimals}: give --asset-decimals ${decimals}`,
    );
  }
  if (input.underlying) {
    const underlyingAsset = await readOrExplain(
      () =>
        client.readContract({
          address: input.underlying as Address,
          abi: erc4626AssetAbi,
          functionName: 'asset',
        }),
      `${input.underlying} does not answer asset(): is it an ERC-4626 vault on this chain?`,
      `asset() of ${input.underlying}`,
    );
    if (getAddress(underlyingAsset) !== asset) {
      throw new AssetCheckError(
        'asset_mismatch',
        `the underlying vault holds ${getAddress(underlyingAsset)}, not ${asset}: the engine's asset must be the vault's`,
      );
    }
  }

  // A test amount unlikely to be anyone's balance, and a probe transfer well inside it.
  const amount = 10n ** 27n + 123_457n;
  const sent = 100n * 10n ** BigInt(decimals) + 7n;
  const balanceSlot = await findBalanceSlot(client, asset, amount);
  const override = [
    { address: balanceSlot.address, stateDiff: [{ slot: balanceSlot.slot, value: word(amount) }] },
    { address: PROBE, code: assetProbeRuntimeCode },
  ];
  let result: readonly [bigint, bigint, bigint, bigint];
  try {
    const { data } = await client.call({
      to: PROBE,
      data: encodeFunctionData({
        abi: assetProbeAbi,
        functionName: 'probe',
        args: [asset, RECIPIENT, sent],
      }),
      stateOverride: mergeOverrides(override),
    });
    result = decodeFunctionResult({
      abi: assetProbeAbi,
      functionName: 'probe',
      data: data ?? '0x',
    }) as readonly [bigint, bigint, bigint, bigint];
  } catch (err) {
    throw new AssetCheckError(
      'asset_not_checked',
      `a simulated transfer of the asset failed (${shortReason(err)}): the asset cannot be checked`,
      { cause: err },
    );
  }
  const [, byTransfer, byTransferFrom, debited] = result;
  if (byTransfer !== sent || byTransferFrom !== sent || debited !== 2n * sent) {
    throw new AssetCheckError(
      'asset_fee_on_transfer',
      `the asset is fee-on-transfer: sending ${sent} base units delivered ${byTransfer} by transfer and ${byTransferFrom} by transferFrom, and took ${debited} for both; the engine credits exactly what is sent, so such an asset is refused`,
    );
  }
  return { balanceSlot, sent, delivered: byTransfer };
}

const erc4626AssetAbi = [
  {
    type: 'function',
    name: 'asset',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ type: 'address' }],
  },
] as const;

async function findBalanceSlot(
  client: ChainClient,
  asset: Address,
  amount: bigint,
): Promise<{ address: Address; slot: Hex }> {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [PROBE] });
  let accessList: { address: Address; storageKeys: Hex[] }[];
  try {
    const answer = (await client.request({
      method: 'eth_createAccessList',
      params: [{ to: asset, data }, 'latest'],
    } as never)) as { accessList?: { address: Address; storageKeys: Hex[] }[] };
    accessList = answer.accessList ?? [];
  } catch (err) {
    throw new AssetCheckError(
      'asset_not_checked',
      `the node does not answer eth_createAccessList (${shortReason(err)}): the asset cannot be checked here`,
      { cause: err },
    );
  }
  let moved = false;
  for (const entry of accessList) {
    for (const slot of entry.storageKeys) {
      let balance: bigint;
      try {
        const { data: ret } = await client.call({
          to: asset,
          data,
          stateOverride: [{ address: entry.address, stateDiff: [{ slot, value: word(amount) }] }],
        });
        balance = decodeFunctionResult({
          abi: erc20Abi,
          functionName: 'balanceOf',
          data: ret ?? '0x',
        });
      } catch (err) {
        if (/state ?override|stateOverride|not supported/i.test(shortReason(err))) {
          throw new AssetCheckError(
            'asset_not_checked',
            `the node does not accept state overrides in eth_call (${shortReason(err)}): the asset cannot be checked here`,
            { cause: err },
          );
        }
        continue; // this slot is not the balance (e.g. a flag whose new value makes it revert)
      }
      if (balance === amount) return { address: getAddress(entry.address), slot };
      if (balance !== 0n) moved = true;
    }
  }
  if (moved) {
    throw new AssetCheckError(
      'asset_rebasing',
      'the asset rebases: its balances are not stored amounts but derived from shares (as stETH, aTokens or AMPL), so a holder balance changes without transfers; the engine credits exactly what is sent, so such an asset is refused',
    );
  }
  throw new AssetCheckError(
    'asset_not_checked',
    'could not find where the asset stores balances (balanceOf reads no storage that holds the amount): the asset cannot be checked',
  );
}

/** One override per address (the balance may live at the probe's own address in theory). */
function mergeOverrides(
  list: { address: Address; stateDiff?: { slot: Hex; value: Hex }[]; code?: Hex }[],
) {
  const byAddress = new Map<string, (typeof list)[number]>();
  for (const o of list) {
    const key = o.address.toLowerCase();
    const prior = byAddress.get(key);
    if (!prior) byAddress.set(key, { ...o });
    else
      byAddress.set(key, {
        ...prior,
        ...(o.code ? { code: o.code } : {}),
        stateDiff: [...(prior.stateDiff ?? []), ...(o.stateDiff ?? [])],
      });
  }
  return [...byAddress.values()];
}

function word(value: bigint): Hex {
  return numberToHex(value, { size: 32 });
}

/**
 * A read the contract must answer: `message` blames the contract only when the chain answered
 * (a revert, no data: not the contract expected). A failure to get an answer at all (the provider
 * refused the connection, timed out, answered an HTTP error) says so instead, naming the failure
 * but never the provider's URL or key.
 */
async function readOrExplain<T>(read: () => Promise<T>, message: string, what: string): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (isRevertOrNoData(err)) throw new AssetCheckError('asset_mismatch', message, { cause: err });
    throw new AssetCheckError(
      'asset_not_checked',
      `the chain's RPC provider did not answer ${what} (${providerFailure(err)}): the asset was not checked; check the chain's rpc_urls and that the provider is reachable, then try again`,
      { cause: err },
    );
  }
}

const NETWORK_WORDS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
};

/** What went wrong in getting an answer, in words without the URL: a network code, a timeout, an HTTP status, or the provider's own short reason. */
function providerFailure(err: unknown): string {
  let status: number | undefined;
  let code: string | undefined;
  let timedOut = false;
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 10; depth++) {
    const o = e as { name?: unknown; status?: unknown; code?: unknown; cause?: unknown };
    if (o.name === 'TimeoutError') timedOut = true;
    if (typeof o.status === 'number' && status === undefined) status = o.status;
    if (typeof o.code === 'string' && code === undefined) code = o.code;
    e = o.cause;
  }
  if (code) return `${NETWORK_WORDS[code] ?? 'network error'}, ${code}`;
  if (timedOut) return 'the request timed out';
  if (status !== undefined) return `HTTP ${status}`;
  return scrubSecrets(shortReason(err));
}

/** The node's reason, without URLs or request bodies (viem's shortMessage). */
function shortReason(err: unknown): string {
  if (err && typeof err === 'object' && 'shortMessage' in err) {
    return String((err as { shortMessage: unknown }).shortMessage);
  }
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
