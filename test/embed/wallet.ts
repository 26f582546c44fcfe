/**
 * A test wallet for Chromium: an EIP-1193 provider injected with `addInitScript` into the frames
 * of one origin (announced by EIP-6963, and as `window.ethereum`), whose requests cross an
 * `exposeBinding` into Node. There, transactions are signed with an anvil account's key (the key
 * never enters the page), reads are forwarded to anvil, and every request is recorded with the
 * origin of the frame that made it.
 */
import type { BrowserContext } from 'playwright-core';
import {
  type Address,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  type TypedDataDefinition,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { batchCallAccountAbi } from '../../src/chain/generated/index.ts';
import { DEV_MNEMONIC } from '../../src/chain/local/accounts.ts';

/** The requests a user confirms in a wallet (each one is a prompt). */
export const PROMPTS = ['eth_sendTransaction', 'wallet_sendCalls', 'eth_signTypedData_v4'];

export interface RecordedCall {
  origin: string;
  method: string;
  params: unknown;
  /** A prompt (PROMPTS): the hash it broadcast (a batch: its id), the signature, or the refusal. */
  outcome?: Hex | string | 'rejected';
  /** What the request answered, when it succeeded. */
  result?: unknown;
}

export interface TestWallet {
  address: Address;
  calls: RecordedCall[];
  /** The chain the wallet says it is on (a test may start it on another to see the prompt). */
  chainId: number;
  /** The next eth_sendTransaction is refused as the user would (EIP-1193 4001). */
  rejectNext: boolean;
  sent(): RecordedCall[];
  /** Every prompt the user answered (transactions, batches, signatures), refusals included. */
  prompts(): RecordedCall[];
  /**
   * Refuses a prompt as the user would (EIP-1193 4001) when it returns true: e.g. the deposit
   * after an approval, or the batch. Asked for every prompt.
   */
  refuse?: (method: string, params: unknown) => boolean;
  /**
   * Injects the wallet into the frames of `origin`: as `window.ethereum` and, unless `announce` is
   * false, announced by EIP-6963 (a wallet that only sets `window.ethereum`, as older ones do).
   */
  install(context: BrowserContext, origin: string, opts?: { announce?: boolean }): Promise<void>;
  /** The wallet as an EIP-1193 provider in Node (the SDK's tests), recorded with origin `node`. */
  request(args: { method: string; params?: unknown }): Promise<unknown>;
}

export function createTestWallet(options: {
  rpcUrl: string;
  chainId: number;
  index: number;
  /**
   * EIP-5792 atomic batching: the account delegates (EIP-7702) to this BatchCallAccount and a
   * `wallet_sendCalls` is one transaction to itself running the calls in order, all or none (as
   * smart-account wallets do). Absent: the wallet answers the EIP-5792 methods with 4200
   * (unsupported), as a plain wallet does.
   */
  batchAccount?: Address;
  /** False: a wallet that cannot sign EIP-712 typed data (answers 4200), as some hardware wallets. */
  typedData?: boolean;
}) {
  const account = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: options.index });
  const signer = createWalletClient({ account, transport: http(options.rpcUrl) });
  const rpc = async (method: string, params: unknown) => {
    const res = await fetch(options.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: params ?? [] }),
    });
    const body = (await res.json()) as {
      result?: unknown;
      error?: { code: number; message: string };
    };
    if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code });
    return body.result;
  };

  const wallet: TestWallet = {
    address: account.address,
    calls: [],
    chainId: options.chainId,
    rejectNext: false,
    sent: () => wallet.calls.filter((c) => c.method === 'eth_sendTransaction'),
    prompts: () => wallet.calls.filter((c) => PROMPTS.includes(c.method)),
    async request(request) {
      const a = await answer('node', request);
      if (a.error) throw Object.assign(new Error(a.error.message), { code: a.error.code });
      return a.result;
    },
    async install(context, origin, opts = {}) {
      await context.exposeBinding(
        '__testWallet',
        async (source, request: { method: string; params?: unknown }) =>
          answer(new URL(source.frame.url()).origin, request),
      );
      await context.addInitScript(injectedProvider, { origin, announce: opts.announce ?? true });
    },
  };

  /** Records and answers one request; errors become EIP-1193 error objects. */
  async function answer(origin: string, request: { method: string; params?: unknown }) {
    const call: RecordedCall = { origin, method: request.method, params: request.params };
    wallet.calls.push(call);
    try {
      call.result = await handle(request.method, request.params, call);
      return { result: call.result };
    } catch (err) {
      const e = err as { code?: number; message?: string };
      return { error: { code: e.code ?? -32603, message: e.message ?? String(err) } };
    }
  }

  const batches = new Map<string, Hex>();
  const unsupported = () =>
    Object.assign(new Error('The wallet does not support this method.'), { code: 4200 });

  async function handle(method: string, params: unknown, call: RecordedCall): Promise<unknown> {
    if (PROMPTS.includes(method)) {
      if (method === 'eth_sendTransaction' && wallet.rejectNext) {
        wallet.rejectNext = false;
        call.outcome = 'rejected';
        throw Object.assign(new Error('User rejected the request.'), { code: 4001 });
      }
      if (wallet.refuse?.(method, params)) {
        call.outcome = 'rejected';
        throw Object.assign(new Error('User rejected the request.'), { code: 4001 });
      }
    }
    switch (method) {
      case 'wallet_getCapabilities': {
        if (!options.batchAccount) throw unsupported();
        const [, chains] = params as [Address, Hex[] | undefined];
        const chainHex = `0x${options.chainId.toString(16)}`;
        if (chains && !chains.map((c) => Number(c)).includes(options.chainId)) return {};
        return { [chainHex]: { atomic: { status: 'supported' } } };
      }
      case 'wallet_sendCalls': {
        if (!options.batchAccount) throw unsupported();
        const [req] = params as [
          {
            chainId: Hex;
            from?: Address;
            atomicRequired?: boolean;
            calls: Array<{ to: Address; data?: Hex; value?: Hex }>;
          },
        ];
        if (Number(req.chainId) !== options.chainId) {
          throw Object.assign(new Error('Unsupported chain'), { code: 5710 });
        }
        if (req.from && req.from.toLowerCase() !== account.address.toLowerCase()) {
          throw Object.assign(new Error('unknown account'), { code: 4100 });
        }
        // Delegated once (EIP-7702); then one transaction to itself runs the whole batch.
        const code = (await rpc('eth_getCode', [account.address, 'latest'])) as Hex;
        const delegated =
          code.toLowerCase() === `0xef0100${options.batchAccount.slice(2)}`.toLowerCase();
        const authorization = delegated
          ? undefined
          : await signer.signAuthorization({
              account,
              contractAddress: options.batchAccount,
              executor: 'self',
            });
        const data = encodeFunctionData({
          abi: batchCallAccountAbi,
          functionName: 'executeBatch',
          args: [
            req.calls.map((c) => ({
              to: c.to,
              value: c.value ? BigInt(c.value) : 0n,
              data: c.data ?? '0x',
            })),
          ],
        });
        const hash = await signer.sendTransaction({
          to: account.address,
          data,
          chain: null,
          // The batch's own estimate plus the engine's fee-accrual allowance (embed-app/src/gas.ts).
          gas: 3_000_000n,
          ...(authorization ? { authorizationList: [authorization] } : {}),
        });
        const id = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`;
        batches.set(id, hash);
        call.outcome = id;
        return { id };
      }
      case 'wallet_getCallsStatus': {
        if (!options.batchAccount) throw unsupported();
        const [id] = params as [string];
        const hash = batches.get(id);
        if (!hash) throw Object.assign(new Error('Unknown bundle id'), { code: 5730 });
        const receipt = (await rpc('eth_getTransactionReceipt', [hash])) as {
          status: Hex;
          logs: unknown[];
          blockHash: Hex;
          blockNumber: Hex;
          gasUsed: Hex;
          transactionHash: Hex;
        } | null;
        return {
          version: '2.0.0',
          id,
          chainId: `0x${options.chainId.toString(16)}`,
          atomic: true,
          status: receipt ? (receipt.status === '0x1' ? 200 : 500) : 100,
          receipts: receipt
            ? [
                {
                  logs: receipt.logs,
                  status: receipt.status,
                  blockHash: receipt.blockHash,
                  blockNumber: receipt.blockNumber,
                  gasUsed: receipt.gasUsed,
                  transactionHash: receipt.transactionHash,
                },
              ]
            : [],
        };
      }
      case 'eth_signTypedData_v4': {
        if (options.typedData === false) throw unsupported();
        const [from, json] = params as [Address, string];
        if (from.toLowerCase() !== account.address.toLowerCase()) {
          throw Object.assign(new Error('unknown account'), { code: 4100 });
        }
        const typed = JSON.parse(json) as TypedDataDefinition & {
          types: Record<string, unknown>;
        };
        const { EIP712Domain: _, ...types } = typed.types;
        const signature = await account.signTypedData({ ...typed, types } as TypedDataDefinition);
        call.outcome = signature;
        return signature;
      }
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return [account.address];
      case 'eth_chainId':
        return `0x${wallet.chainId.toString(16)}`;
      case 'wallet_switchEthereumChain': {
        const [{ chainId }] = params as [{ chainId: Hex }];
        if (Number(chainId) !== options.chainId) {
          throw Object.assign(new Error('Unrecognized chain'), { code: 4902 });
        }
        wallet.chainId = options.chainId;
        return null;
      }
      case 'eth_sendTransaction': {
        const [tx] = params as [{ from: Address; to: Address; data: Hex; gas?: Hex }];
        if (tx.from.toLowerCase() !== account.address.toLowerCase()) {
          throw Object.assign(new Error('unknown account'), { code: 4100 });
        }
        // As wallets do: the page's gas limit when it gives one, else the wallet's own estimate.
        const hash = await signer.sendTransaction({
          to: tx.to,
          data: tx.data,
          chain: null,
          ...(tx.gas ? { gas: BigInt(tx.gas) } : {}),
        });
        call.outcome = hash;
        return hash;
      }
      default:
        if (wallet.chainId !== options.chainId) throw new Error('test wallet: not on the chain');
        return rpc(method, params);
    }
  }

  return wallet;
}

/** What the injected script uses of the page's global (the test program has no DOM types). */
interface PageGlobal {
  location: { origin: string };
  ethereum?: unknown;
  __testWallet: (r: { method: string; params?: unknown }) => Promise<{
    result?: unknown;
    error?: { code: number; message: string };
  }>;
  dispatchEvent(event: unknown): boolean;
  addEventListener(type: string, listener: () => void): void;
  CustomEvent: new (type: string, init: { detail: unknown }) => unknown;
}

/** Runs in the page, in every frame; becomes a wallet only in frames of `origin`. */
function injectedProvider({ origin, announce: announces }: { origin: string; announce: boolean }) {
  const page = globalThis as unknown as PageGlobal;
  if (page.location.origin !== origin) return;
  const listeners = new Map<string, Set<(...a: unknown[]) => void>>();
  const provider = {
    isTestWallet: true,
    async request({ method, params }: { method: string; params?: unknown }) {
      const answer = await page.__testWallet({ method, params });
      if (answer.error) {
        throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
      }
      if (method === 'wallet_switchEthereumChain') {
        const chainId = (params as [{ chainId: string }])[0].chainId;
        for (const fn of listeners.get('chainChanged') ?? []) fn(chainId);
      }
      return answer.result;
    },
    on(event: string, fn: (...a: unknown[]) => void) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(fn);
    },
    removeListener(event: string, fn: (...a: unknown[]) => void) {
      listeners.get(event)?.delete(fn);
    },
  };
  page.ethereum = provider;
  if (!announces) return;
  const announce = () =>
    page.dispatchEvent(
      new page.CustomEvent('eip6963:announceProvider', {
        detail: Object.freeze({
          info: {
            uuid: '6b3a7e0e-0000-4000-8000-000000000001',
            name: 'Test Wallet',
            icon: "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 10 10'%3E%3Crect width='10' height='10' rx='2' fill='%23f5a623'/%3E%3C/svg%3E",
            rdns: 'test.wallet',
          },
          provider,
        }),
      }),
    );
  page.addEventListener('eip6963:requestProvider', announce);
  announce();
}
