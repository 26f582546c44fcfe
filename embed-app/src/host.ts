/**
 * The host helper: the few lines a partner's page includes (`<script src="{embed_url}/host.js">`)
 * to frame the embed, size the iframe to its content, receive the embed's events and, in bridge
 * mode, relay the embed's EIP-1193 requests to the page's own wallet. It talks only to the
 * embed's origin and only to its own iframe's window; it relays requests as they come and never
 * builds a call of its own.
 *
 *   const embed = YieldEmbed.mount(document.getElementById('yield'), {
 *     src: 'https://yield.example.com/embed/emb_…/usdc-core',
 *     theme: 'dark', accent: '#0a7cff',
 *     provider: window.ethereum,          // bridge mode: optional
 *     onEvent: (e) => console.log(e.type, e.data),
 *   });
 */
import type { EmbedToHost, HostEventType } from './messages.ts';
import { isMessage } from './messages.ts';
import type { Eip1193Provider } from './wallet.ts';

export interface EmbedEvent {
  type: HostEventType;
  data: Record<string, unknown>;
}

export interface MountOptions {
  /** The iframe URL: `{embed_url}/{embed_id}/{product_slug}`. */
  src: string;
  theme?: 'light' | 'dark' | 'auto';
  /** Accent colour, `#rrggbb`. */
  accent?: string;
  /** Bridge mode: the page's EIP-1193 wallet, used by the embed through this helper. */
  provider?: Eip1193Provider;
  onEvent?: (event: EmbedEvent) => void;
  /** Accessible title of the iframe. */
  title?: string;
  /** Initial height in pixels before the embed reports its own. */
  height?: number;
}

export interface EmbedHandle {
  iframe: HTMLIFrameElement;
  on(type: HostEventType | '*', listener: (event: EmbedEvent) => void): () => void;
  destroy(): void;
}

const PROVIDER_EVENTS = ['accountsChanged', 'chainChanged', 'disconnect'] as const;

export function mount(container: HTMLElement, options: MountOptions): EmbedHandle {
  const url = new URL(options.src, location.href);
  const embedOrigin = url.origin;
  url.searchParams.set('origin', location.origin);
  if (options.theme) url.searchParams.set('theme', options.theme);
  if (options.accent) url.searchParams.set('accent', options.accent.replace(/^#/, ''));
  if (options.provider) url.searchParams.set('bridge', '1');

  const iframe = document.createElement('iframe');
  iframe.src = url.toString();
  iframe.title = options.title ?? 'Deposit and withdraw';
  iframe.style.cssText = `width:100%;border:0;display:block;height:${options.height ?? 560}px`;
  iframe.setAttribute('allow', 'clipboard-write');
  container.appendChild(iframe);

  const listeners = new Map<string, Set<(e: EmbedEvent) => void>>();
  const dispatch = (event: EmbedEvent) => {
    options.onEvent?.(event);
    for (const fn of listeners.get(event.type) ?? []) fn(event);
    for (const fn of listeners.get('*') ?? []) fn(event);
  };
  const toEmbed = (message: object) =>
    iframe.contentWindow?.postMessage({ yieldEmbed: 1, ...message }, embedOrigin);

  const onMessage = async (event: MessageEvent) => {
    if (event.source !== iframe.contentWindow || event.origin !== embedOrigin) return;
    if (!isMessage(event.data)) return;
    const msg = event.data as EmbedToHost;
    if (msg.kind === 'resize' && Number.isFinite(msg.height)) {
      iframe.style.height = `${Math.max(120, Math.min(4000, msg.height))}px`;
    } else if (msg.kind === 'event' && typeof msg.type === 'string') {
      dispatch({ type: msg.type, data: msg.data ?? {} });
    } else if (msg.kind === 'rpc' && options.provider) {
      try {
        const result = await options.provider.request({
          method: msg.method,
          ...(msg.params === undefined ? {} : { params: msg.params }),
        });
        toEmbed({ kind: 'rpc_result', id: msg.id, result });
      } catch (err) {
        const e = err as { code?: unknown; message?: unknown };
        toEmbed({
          kind: 'rpc_result',
          id: msg.id,
          error: {
            code: typeof e.code === 'number' ? e.code : -32603,
            message: typeof e.message === 'string' ? e.message : 'wallet request failed',
          },
        });
      }
    }
  };
  window.addEventListener('message', onMessage);

  const relays = PROVIDER_EVENTS.map((name) => {
    const fn = (data: unknown) => toEmbed({ kind: 'provider_event', event: name, data });
    options.provider?.on?.(name, fn);
    return [name, fn] as const;
  });

  return {
    iframe,
    on(type, listener) {
      if (!listeners.has(type)) listeners.set(type, new Set());
      listeners.get(type)!.add(listener);
      return () => listeners.get(type)?.delete(listener);
    },
    destroy() {
      window.removeEventListener('message', onMessage);
      for (const [name, fn] of relays) options.provider?.removeListener?.(name, fn);
      iframe.remove();
    },
  };
}
