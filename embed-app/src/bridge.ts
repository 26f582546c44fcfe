/**
 * Bridge mode: an EIP-1193 provider whose requests the host helper relays to the host page's own
 * wallet. Requests go only to the configured host origin and answers are read only from the
 * parent window at that origin; the host relays what the embed asks, it never builds a call.
 */
import { type HostToEmbed, isMessage } from './messages.ts';
import type { Eip1193Provider } from './wallet.ts';

export class ProviderRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export function bridgeProvider(hostOrigin: string, timeoutMs = 120_000): Eip1193Provider {
  let next = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const listeners = new Map<string, Set<(...args: unknown[]) => void>>();
  window.addEventListener('message', (event) => {
    if (event.source !== window.parent || event.origin !== hostOrigin) return;
    if (!isMessage(event.data)) return;
    const msg = event.data as HostToEmbed;
    if (msg.kind === 'rpc_result') {
      const p = pending.get(msg.id);
      if (!p) return;
      pending.delete(msg.id);
      if (msg.error) p.reject(new ProviderRpcError(msg.error.code, msg.error.message));
      else p.resolve(msg.result);
    } else if (msg.kind === 'provider_event') {
      for (const fn of listeners.get(msg.event) ?? []) fn(msg.data);
    }
  });
  return {
    request({ method, params }) {
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        window.parent.postMessage({ yieldEmbed: 1, kind: 'rpc', id, method, params }, hostOrigin);
        // A wallet prompt can stay open a while; a host page without the helper never answers.
        setTimeout(() => {
          if (pending.delete(id)) {
            reject(new ProviderRpcError(4900, 'The host page did not answer the wallet request.'));
          }
        }, timeoutMs);
      });
    },
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(fn);
    },
    removeListener(event, fn) {
      listeners.get(event)?.delete(fn);
    },
  };
}
