/**
 * A test wallet for Chromium: an EIP-1193 provider injected with `addInitScript` into the frames
 * of one origin (announced by EIP-6963, and as `window.ethereum`), whose requests cross an
 * `exposeBinding` into Node. There, transactions are signed with an anvil account's key (the key
 * never enters the page), reads are forwarded to anvil, and every request is recorded with the
 * origin of the frame that made it.
 */
import type { BrowserContext } from 'playwright-core';
import { type Address, createWalletClient, type Hex, http } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { DEV_MNEMONIC } from '../../src/chain/local/accounts.ts';

export interface RecordedCall {
  origin: string;
  method: string;
  params: unknown;
  /** eth_sendTransaction: the hash it broadcast, or the refusal. */
  outcome?: Hex | 'rejected';
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
  /**
   * Injects the wallet into the frames of `origin`: as `window.ethereum` and, unless `announce` is
   * false, announced by EIP-6963 (a wallet that only sets `window.ethereum`, as older ones do).
   */
  install(context: BrowserContext, origin: string, opts?: { announce?: boolean }): Promise<void>;
}

export function createTestWallet(options: { rpcUrl: string; chainId: number; index: number }) {
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
    async install(context, origin, opts = {}) {
      await context.exposeBinding(
        '__testWallet',
        async (source, request: { method: string; params?: unknown }) => {
          const call: RecordedCall = {
            origin: new URL(source.frame.url()).origin,
            method: request.method,
            params: request.params,
          };
          wallet.calls.push(call);
          try {
            call.result = await handle(request.method, request.params, call);
            return { result: call.result };
          } catch (err) {
            const e = err as { code?: number; message?: string };
            return { error: { code: e.code ?? -32603, message: e.message ?? String(err) } };
          }
        },
      );
      await context.addInitScript(injectedProvider, { origin, announce: opts.announce ?? true });
    },
  };

  async function handle(method: string, params: unknown, call: RecordedCall): Promise<unknown> {
    switch (method) {
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
        if (wallet.rejectNext) {
          wallet.rejectNext = false;
          call.outcome = 'rejected';
          throw Object.assign(new Error('User rejected the request.'), { code: 4001 });
        }
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
