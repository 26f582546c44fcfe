/**
 * The messages between the embed and the host helper (embed-app/src/host.ts), both ways over
 * postMessage. Every message carries `yieldEmbed: 1` so either side ignores other traffic; each side
 * also checks the sender's origin and window before reading one.
 */
export type HostEventType =
  | 'ready'
  | 'wallet_connected'
  | 'deposit_submitted'
  | 'deposit_confirmed'
  | 'redeem_submitted'
  | 'redeem_requested'
  | 'redeem_confirmed'
  | 'error';

export type EmbedToHost =
  | { yieldEmbed: 1; kind: 'event'; type: HostEventType; data: Record<string, unknown> }
  | { yieldEmbed: 1; kind: 'resize'; height: number }
  | { yieldEmbed: 1; kind: 'rpc'; id: number; method: string; params?: unknown };

export type HostToEmbed =
  | {
      yieldEmbed: 1;
      kind: 'rpc_result';
      id: number;
      result?: unknown;
      error?: { code: number; message: string };
    }
  | { yieldEmbed: 1; kind: 'provider_event'; event: string; data: unknown };

export const isMessage = (data: unknown): data is { yieldEmbed: 1; kind: string } =>
  typeof data === 'object' && data !== null && (data as { yieldEmbed?: unknown }).yieldEmbed === 1;
