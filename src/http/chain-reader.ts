/**
 * Live chain reads for the position and health endpoints. Every read of one request is pinned to one
 * block (so shares and assets agree), bounded in time (a slow RPC answers 503
 * chain_rpc_unavailable, never a hung request or a 500), batched into JSON-RPC batches by the
 * transport, and cached for a few seconds (the spec suggests clients cache position 30 s and
 * health 60 s; a short server cache absorbs bursts without serving stale state for long).
 */
import type { ChainClient } from '../chain/client.ts';
import { readEngineFlags } from '../chain/read-engine-flags.ts';
import { readExitStatus } from '../chain/read-exit-status.ts';
import { readPosition } from '../chain/read-position.ts';
import { type RequestReading, readRedeemRequests } from '../chain/read-redeem-requests.ts';
import {
  readScheduledFeeChange,
  type ScheduledFeeChange,
} from '../chain/read-scheduled-fee-change.ts';
import { readUpstreamStatus } from '../chain/read-upstream-status.ts';
import type { Product } from '../db/products.ts';
import { chainReadDuration, chainReadFailures } from '../telemetry/metrics.ts';
import { ApiError } from './errors.ts';
import { createTtlCache } from './ttl-cache.ts';

export interface ChainReaderOptions {
  clients: ReadonlyMap<number, ChainClient>;
  /** Chain ids whose addresses are not EVM addresses (position answers chain_not_supported). */
  nonEvmChains?: ReadonlySet<number>;
  /**
   * The bound on a request that reads the chain, counted from the request's arrival: its reads get
   * what is left of it after the request's own work and a headroom for the reply. Default 2000.
   */
  timeoutMs?: number;
  cacheMs?: number;
  /** How long one observed head block is reused before asking the node again. */
  headMs?: number;
}

export interface PositionReading {
  shares: bigint;
  assets: bigint;
  blockNumber: bigint;
  /** The requests asked for (`requestIds`), read at the same block. */
  requests: RequestReading[];
}

export interface HealthReading {
  isPaused: boolean;
  underlyingOk: boolean;
  /** Exits are requested and claimed later (an asynchronous underlying). */
  asyncExits: boolean;
  /** The underlying lets the engine take out less than it holds there. */
  exitsLimited: boolean;
  /** A fee increase waiting for its notice period (not in force yet); null when none. */
  scheduledFeeChange?: ScheduledFeeChange | null;
  lastBlock: bigint;
}

/**
 * Left of the bound for what follows a failed read: the error envelope, its access-log line and the
 * write to the socket (well under a millisecond on an idle machine; this covers a loaded one).
 */
const REPLY_HEADROOM_MS = 150;

/** Settles as `promise` does, or rejects with chain_rpc_unavailable after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ApiError('chain_rpc_unavailable')), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function createChainReader(options: ChainReaderOptions) {
  const timeoutMs = options.timeoutMs ?? 2000;
  /**
   * What a request that has been running `elapsedMs` may still wait for the chain. A read is bounded
   * by the share of the request that starts it (so it fails, and counts as failed, when that request
   * answers 503); a request sharing it through the cache waits only its own share, so one that
   * arrived later (or spent longer on its own lookups) still answers in time.
   */
  const budget = (elapsedMs: number) => Math.max(0, timeoutMs - REPLY_HEADROOM_MS - elapsedMs);
  const positions = createTtlCache<PositionReading>(options.cacheMs ?? 5000);
  const healths = createTtlCache<HealthReading>(options.cacheMs ?? 5000);
  const heads = createTtlCache<bigint>(options.headMs ?? 1000);
  /**
   * Reads that have answered. A request served from the cache after its read answered needs no
   * bound: `within` would race the answer against a timer that can never win, one timer and two
   * promises per request (#33 item 7). Only reads still in flight are raced.
   */
  const answered = new WeakMap<Promise<unknown>, unknown>();
  const remember = <T>(read: Promise<T>): Promise<T> => {
    read.then(
      (value) => answered.set(read, value),
      () => {},
    );
    return read;
  };
  const boundedBy = <T>(read: Promise<T>, ms: number): Promise<T> =>
    answered.has(read) ? read : within(read, ms);
  /** The reading a cached read answered, while the cache keeps it; undefined otherwise. */
  const answeredFor = <T>(read: Promise<T> | undefined): T | undefined =>
    read === undefined ? undefined : (answered.get(read) as T | undefined);
  const positionKey = (product: Product, wallet: string, requestIds: readonly bigint[]) =>
    `${product.chainId}:${product.engineAddress!}:${wallet}:${requestIds.join(',')}`;
  const healthKey = (product: Product) => `${product.chainId}:${product.engineAddress!}`;

  const clientFor = (product: Product): ChainClient => {
    const client = options.clients.get(product.chainId);
    if (!client)
      throw new ApiError('chain_rpc_unavailable', `Chain ${product.chainId} is not configured.`);
    return client;
  };

  /**
   * Runs one read within `ms`; any failure of the RPC becomes 503 chain_rpc_unavailable.
   */
  async function bounded<T>(chainId: number, ms: number, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const started = performance.now();
    const chain = String(chainId);
    try {
      const value = await Promise.race([
        fn(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('chain read timed out')), ms);
        }),
      ]);
      chainReadDuration.observe(
        { chain_id: chain, outcome: 'ok' },
        (performance.now() - started) / 1000,
      );
      return value;
    } catch (err) {
      chainReadDuration.observe(
        { chain_id: chain, outcome: 'failed' },
        (performance.now() - started) / 1000,
      );
      chainReadFailures.inc({ chain_id: chain });
      if (err instanceof ApiError) throw err;
      throw new ApiError('chain_rpc_unavailable');
    } finally {
      clearTimeout(timer);
    }
  }

  const head = (product: Product) =>
    heads.get(String(product.chainId), () => clientFor(product).getBlockNumber({ cacheTime: 0 }));

  return {
    isEvmChain(chainId: number): boolean {
      return !options.nonEvmChains?.has(chainId);
    },

    /** `elapsedMs`: how long the request has been running (Fastify's `reply.elapsedTime`). */
    readPosition(
      product: Product,
      wallet: `0x${string}`,
      elapsedMs = 0,
      requestIds: readonly bigint[] = [],
    ): Promise<PositionReading> {
      const engine = product.engineAddress!;
      const ms = budget(elapsedMs);
      const read = positions.get(positionKey(product, wallet, requestIds), () =>
        remember(
          bounded(product.chainId, ms, async () => {
            const client = clientFor(product);
            const blockNumber = await head(product);
            const [{ shares, assets }, requests] = await Promise.all([
              readPosition(client, { vault: engine, owner: wallet, blockNumber }),
              requestIds.length === 0
                ? Promise.resolve([])
                : readRedeemRequests(client, {
                    engine,
                    controller: wallet,
                    ids: requestIds,
                    blockNumber,
                  }),
            ]);
            return { shares, assets, blockNumber, requests };
          }),
        ),
      );
      return boundedBy(read, ms);
    },

    /**
     * The reading readPosition would answer now without reading the chain (the cached read has
     * answered and is within its time), or undefined: held answers stay valid while it is the same
     * reading (src/http/held-answers.ts).
     */
    cachedPosition(product: Product, wallet: `0x${string}`): PositionReading | undefined {
      return answeredFor(positions.peek(positionKey(product, wallet, [])));
    },

    /** As cachedPosition, for readHealth. */
    cachedHealth(product: Product): HealthReading | undefined {
      return answeredFor(healths.peek(healthKey(product)));
    },

    /** `elapsedMs`: how long the request has been running (Fastify's `reply.elapsedTime`). */
    readHealth(product: Product, elapsedMs = 0): Promise<HealthReading> {
      const engine = product.engineAddress!;
      const ms = budget(elapsedMs);
      const read = healths.get(healthKey(product), () =>
        remember(
          bounded(product.chainId, ms, async () => {
            const client = clientFor(product);
            const blockNumber = await head(product);
            const [flags, upstream, exits, scheduledFeeChange] = await Promise.all([
              readEngineFlags(client, { engine, blockNumber }),
              readUpstreamStatus(client, {
                vault: product.underlyingVaultAddress,
                engine,
                blockNumber,
              }),
              readExitStatus(client, { engine, blockNumber }),
              readScheduledFeeChange(client, { engine, blockNumber }),
            ]);
            return {
              isPaused: flags.paused,
              underlyingOk: upstream.ok,
              asyncExits: exits.async,
              exitsLimited: exits.limited,
              scheduledFeeChange,
              lastBlock: blockNumber,
            };
          }),
        ),
      );
      return boundedBy(read, ms);
    },
  };
}

export type ChainReader = ReturnType<typeof createChainReader>;
