/**
 * Wallets the embed can use: those announced inside the frame by EIP-6963, `window.ethereum`
 * (EIP-1193) when none announces itself, or, in bridge mode, the host page's wallet relayed by the
 * host helper (bridge.ts).
 */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
  on?(event: string, listener: (...args: unknown[]) => void): void;
  removeListener?(event: string, listener: (...args: unknown[]) => void): void;
}

export interface WalletOption {
  id: string;
  name: string;
  /** A data: URI (EIP-6963 requires one); absent for the fallback. */
  icon?: string;
  provider: Eip1193Provider;
}

interface AnnounceDetail {
  info: { uuid: string; name: string; icon: string; rdns: string };
  provider: Eip1193Provider;
}

/**
 * Collects EIP-6963 announcements and calls `onChange` with the list whenever it grows; after
 * `fallbackMs` with no announcement, offers `window.ethereum` if there is one. Returns a stop.
 */
export function discoverWallets(
  onChange: (wallets: WalletOption[], settled: boolean) => void,
  fallbackMs = 250,
): () => void {
  const found = new Map<string, WalletOption>();
  const onAnnounce = (event: Event) => {
    const detail = (event as CustomEvent<AnnounceDetail>).detail;
    if (!detail?.info?.uuid || typeof detail.provider?.request !== 'function') return;
    const icon = detail.info.icon?.startsWith('data:image/') ? detail.info.icon : undefined;
    found.set(detail.info.uuid, {
      id: detail.info.rdns || detail.info.uuid,
      name: detail.info.name || 'Wallet',
      ...(icon ? { icon } : {}),
      provider: detail.provider,
    });
    onChange([...found.values()], false);
  };
  window.addEventListener('eip6963:announceProvider', onAnnounce);
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  const timer = setTimeout(() => {
    const injected = (window as { ethereum?: Eip1193Provider }).ethereum;
    if (found.size === 0 && injected && typeof injected.request === 'function') {
      found.set('injected', { id: 'injected', name: 'Browser wallet', provider: injected });
    }
    onChange([...found.values()], true);
  }, fallbackMs);
  return () => {
    clearTimeout(timer);
    window.removeEventListener('eip6963:announceProvider', onAnnounce);
  };
}
